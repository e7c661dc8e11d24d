// registry.h: the conformance matrices, one place shared by ctest and the runner.
//
// Each entry is one scenario: a format, a token count, a block size, padded or dense pages and
// DP-padding rows. Two tables draw from it:
//  - conformance_matrix(): the upstream DSpark test ("KV-only equals dummy-query insert"),
//    replayed in rounds like the upstream test: round r draws new kv values, moves every
//    position on by one, and the last round maps every slot to -1.
//  - kernel_matrix(op): the kernel conformance matrix, every op x format x token count x block
//    size x page stride (trimmed at the largest token counts), one round each, compared with the
//    oracle byte for byte.
// Adding a case is one line in registry.cpp.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "testkit/cases/case_builder.h"

namespace kvc::cases {

inline constexpr int kUpstreamRounds = 3;
inline constexpr std::int64_t kUpstreamPositionBase = 7;
inline constexpr std::int64_t kUpstreamSkipEvery = 5;  // slots[::5] = -1
inline constexpr std::int64_t kUpstreamQueryHeads = 8;
inline constexpr float kUpstreamFp8Scale = 0.7f;
inline constexpr float kUpstreamEps = 1e-20f;

// How a scenario's kv (and query) values are drawn.
enum class KvValues : std::uint8_t {
  // bf16(N(0, 1)), the upstream test's torch.randn. Box-Muller: about 10^7 values a second.
  kNormal = 0,
  // Random sign and mantissa with an exponent drawn per 32-dim chunk from a wide range, so the
  // blocks of one row get different UE8M0 scales and the fp8 cache sees saturation and
  // subnormal codes; about 10^9 values a second, which the 2^18-token cases need.
  kWideRange = 1,
};

struct ConformanceSpec {
  RecordFormat format;
  std::int64_t tokens;  // slots inserted (M)
  std::int64_t block_size = 256;
  std::int64_t dp_padding_rows = 3;  // kv rows beyond the slots, never read
  bool padded_pages = true;          // the upstream page stride, so every page has padding
  std::uint64_t seed = 42;
  KvValues values = KvValues::kNormal;
  // The legacy op's query: H live heads and, for packed formats, Hp padded heads (0: no Q
  // output). Full caches write H heads. Random values when random_query, else the upstream
  // dummy query of zeros.
  std::int64_t query_heads = kUpstreamQueryHeads;
  std::int64_t padded_heads = kUpstreamQueryHeads;
  bool random_query = false;

  // "Packed584_Tokens1024_Bs256_Padded"
  std::string name() const;
};

// GoogleTest prints a parameter with this instead of its raw bytes.
inline std::ostream& operator<<(std::ostream& os, const ConformanceSpec& s) { return os << s.name(); }

const std::vector<ConformanceSpec>& conformance_matrix();

// The kernel conformance matrix's axes. Every format runs at every token count; the cross
// product with block sizes and page strides is trimmed above kMatrixFullProductTokens (see
// registry.cpp for what each larger count keeps).
inline constexpr std::int64_t kMatrixTokens[] = {0, 1, 17, 1023, 1024, 1025, 16384, 65536, 262144};
inline constexpr std::int64_t kMatrixBlockSizes[] = {16, 64, 256};
inline constexpr std::int64_t kMatrixFullProductTokens = 16384;

// Scenarios of the kernel matrix for one op (kKvOnly or kLegacy), in a stable order.
const std::vector<ConformanceSpec>& kernel_matrix(InsertOp op);

// The KV-only case of round `round` (0-based) of a scenario.
InsertCase build_kv_only(const ConformanceSpec& spec, int round);
// The legacy op's view of the same round: the spec's query (zeros of 8 heads, Hp = 8, for the
// upstream scenario).
InsertCase build_legacy(const ConformanceSpec& spec, int round);
// build_kv_only or build_legacy.
InsertCase build_case(InsertOp op, const ConformanceSpec& spec, int round);

}  // namespace kvc::cases
