// fixture_inputs.h: deterministic input values for golden fixtures.
//
// Inputs are data, not expectations, so they are made in plain C++; but they must be the same
// bits on every machine and with every torch version, so they come from a SplitMix64 stream and
// integer bit construction only: no torch random generator (its algorithms change between
// versions), no standard-library distribution, no libm. Each row follows a recipe that places
// the edge values of docs/contract.md §3.7 where the encoders decide bytes from them.
#pragma once

#include <cstdint>
#include <vector>

#include "encodings.h"

namespace kvc::golden_generator {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n) { return next() % n; }  // n small: the bias is irrelevant here
  bool coin() { return (next() & 1) != 0; }

 private:
  std::uint64_t state_;
};

// What a 512-dim row holds. kEdgeMix gives each 32-dim segment one class of §3.7 (NaN quiet and
// signalling with several payloads, ±Inf, −0 in a zero block, an all-zero block, subnormals,
// amax = 448·2^k and one 16-bit ulp either side, an outlier over tiny values, e4m3 ties, an
// outlier over subnormals that scale below fp32's normal range); kRopeEdges puts NaN, ±Inf, −0,
// huge and subnormal values into RoPE pairs.
enum class RowRecipe : std::uint8_t { kRandom, kEdgeMix, kHuge, kTiny, kZero, kRopeEdges, kPow2Blocks };

// One row of 512 16-bit patterns. `variant` shifts which class each segment gets, so that rows
// of the same recipe differ.
std::vector<std::uint16_t> make_row(RowRecipe recipe, Storage16 storage, std::uint64_t variant, SplitMix64& rng);

// A [max_pos, 64] cos/sin table of fp32 values with 24 random significant bits, magnitudes up to
// 2 (row 0 is the identity rotation: cos 1, sin 0).
std::vector<float> make_cos_sin_table(std::int64_t max_pos, SplitMix64& rng);

// A kv_norm weight [512] of bf16 patterns around 1, with 0, a negative, a large and a subnormal
// entry.
std::vector<std::uint16_t> make_norm_weight(SplitMix64& rng);

}  // namespace kvc::golden_generator
