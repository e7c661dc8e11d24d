// registry.h: the conformance matrices, one place shared by ctest and the runner.
//
// Each entry is one scenario: a format, a token count, a block size, padded or dense pages and
// DP-padding rows. Two tables draw from it:
//  - conformance_matrix(): the upstream DSpark test ("KV-only equals dummy-query insert"),
//    replayed in rounds like the upstream test: round r draws new kv values, moves every
//    position on by one, and the last round maps every slot to -1.
//  - kernel_matrix(op): the kernel conformance matrix, every op x format x token count x block
//    size x page stride (trimmed at the largest token counts), one round each, compared with the
//    oracle byte for byte; then, at small sizes, the families that reach input a plain matrix
//    never sends: edge values (NaN, +-Inf, -0, subnormals, values past the fp8 range) in kv and q,
//    every tensor as a view at a byte offset the contract allows, slot and position tensors that
//    are views of longer buffers with valid entries past their end; and one case per op and format
//    longer than any persistent grid an H200 holds, which --max-tokens never drops.
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
  // kWideRange with the edge values of docs/contract.md §3.7 planted in every row (kv, and q for
  // the legacy op): NaN with and without payload in NoPE and RoPE dims, +-Inf blocks, -0, bf16
  // subnormals, values past the fp8 range (testkit/cases/edge_values.h).
  kEdgeValues = 2,
};

// Where a scenario's tensors sit in their buffers.
enum class Placement : std::uint8_t {
  kOwnBuffers = 0,  // every tensor at the start of a buffer of its own size
  // Every tensor a view at a non-zero byte offset the contract allows: 16-byte multiples for the
  // tensors of the 16-byte rule (kv, q, q_out, cos_sin_cache, the cache), element-aligned offsets
  // that are not 16-byte multiples for the others (testkit/cases/offset_views.h).
  kOffsetViews = 1,
  // slot_mapping and position_ids views of the first M and N entries of longer buffers whose
  // entries past the view are valid: distinct free slots, positions inside the table
  // (testkit/cases/index_tails.h).
  kIndexTails = 2,
};

// Whether --max-tokens may drop a scenario from the runner's kernel matrix.
enum class TokenLimit : std::uint8_t {
  kApplies = 0,
  kExempt = 1,  // kept whatever --max-tokens says: the grid-loop scenarios (kGridLoopTokens)
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
  Placement placement = Placement::kOwnBuffers;
  TokenLimit token_limit = TokenLimit::kApplies;

  // "Packed584_Tokens1024_Bs256_Padded", with "_EdgeValues", "_OffsetViews" or "_IndexTails" for
  // the families.
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

// Rows that make a persistent grid loop on an H200 whatever its occupancy. Our large-batch kernels
// (the KV-only insert, kernels/src/kv_insert.cu; the legacy op's large-batch grid from kTokenCutoff
// rows, kernels/src/legacy_insert.cu) launch min(rows / 8, resident) blocks of 8 warps, one row per
// warp per step, where resident = SMs x blocks per SM (kernels/src/launch_config.h). An SM holds at
// most 2048 threads, 8 such blocks, so no grid has more than 132 x 8 x 8 = 8448 warps and row 8448
// is always a second step. At the KV-only kernel's 50% occupancy (kv_insert.cu: 4 blocks per SM,
// 4224 warps) every warp makes two steps and one a third. A grid-stride bug (a loop that stops
// after one pass, a stride of blockDim instead of the grid, a prefetch of the next row that skips
// one) shows only past that many rows.
inline constexpr std::int64_t kH200Sms = 132;
inline constexpr std::int64_t kMaxResidentWarpsPerSm = 64;  // 2048 threads
inline constexpr std::int64_t kGridLoopTokens = kH200Sms * kMaxResidentWarpsPerSm + 1;

// Scenarios of the kernel matrix for one op (kKvOnly or kLegacy), in a stable order.
const std::vector<ConformanceSpec>& kernel_matrix(InsertOp op);

// Whether the runner's `--max-tokens max_tokens` (0: no limit) keeps the scenario.
bool within_token_limit(const ConformanceSpec& spec, std::int64_t max_tokens);

// The KV-only case of round `round` (0-based) of a scenario.
InsertCase build_kv_only(const ConformanceSpec& spec, int round);
// The legacy op's view of the same round: the spec's query (zeros of 8 heads, Hp = 8, for the
// upstream scenario).
InsertCase build_legacy(const ConformanceSpec& spec, int round);
// build_kv_only or build_legacy.
InsertCase build_case(InsertOp op, const ConformanceSpec& spec, int round);
// A kv_norm weight (offset 0) for the scenario's KV-only case, placed as the scenario places its
// tensors: for kOffsetViews a view at a 2-byte offset (testkit/cases/offset_views.h). The fused
// kv_norm suites add their weight through it.
HostTensor place_kv_norm_weight(const ConformanceSpec& spec, HostTensor weight);

}  // namespace kvc::cases
