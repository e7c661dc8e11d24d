// registry.h: the conformance matrix, one table shared by ctest and the runner.
//
// Each entry is one upstream-style scenario (the DSpark "KV-only equals dummy-query insert" test):
// a format, a token count, a block size, padded pages and DP-padding rows. A scenario is replayed
// in rounds like the upstream test: round r draws new kv values, moves every position on by one,
// and the last round maps every slot to -1. Adding a case is one line in registry.cpp.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "kvc/testkit/case_builder.h"

namespace kvc::cases {

struct ConformanceSpec {
  RecordFormat format;
  std::int64_t tokens;            // slots inserted (M)
  std::int64_t block_size = 256;
  std::int64_t dp_padding_rows = 3;  // kv rows beyond the slots, never read
  bool padded_pages = true;          // the upstream page stride, so every page has padding
  std::uint64_t seed = 42;

  // "Packed584_Tokens1024_Bs256_Padded"
  std::string name() const;
};

// GoogleTest prints a parameter with this instead of its raw bytes.
inline std::ostream& operator<<(std::ostream& os, const ConformanceSpec& s) { return os << s.name(); }

inline constexpr int kUpstreamRounds = 3;
inline constexpr std::int64_t kUpstreamPositionBase = 7;
inline constexpr std::int64_t kUpstreamSkipEvery = 5;   // slots[::5] = -1
inline constexpr std::int64_t kUpstreamQueryHeads = 8;
inline constexpr float kUpstreamFp8Scale = 0.7f;
inline constexpr float kUpstreamEps = 1e-20f;

const std::vector<ConformanceSpec>& conformance_matrix();

// The KV-only case of round `round` (0-based) of a scenario.
InsertCase build_kv_only(const ConformanceSpec& spec, int round);
// The legacy op's view of the same round: zero query of 8 heads (Hp = 8 for packed formats).
InsertCase build_legacy(const ConformanceSpec& spec, int round);

}  // namespace kvc::cases
