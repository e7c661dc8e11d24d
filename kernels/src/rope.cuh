// rope.cuh: GPT-J RoPE of dims [448, 512) on the (virtual) lanes that own them
// (docs/contract.md §2).
//
// Lane v in 28..31 holds pairs j = 8(v-28) .. 8(v-28)+7 of dims (448+2j, 449+2j); it reads the 8
// cosines and 8 sines it needs from the position's 64-float row with four 16-byte loads.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "lane_io.cuh"

namespace kvc::kernels::detail {

inline constexpr int kPairsPerLane = kLaneDims / 2;

__device__ __forceinline__ bool is_rope_lane(int vlane) { return vlane >= kFirstRopeLane; }

// Rotates the 16 dims of RoPE lane `vlane` (28..31) at `position` (must be in the table).
__device__ __forceinline__ void rope_lane(float (&x)[kLaneDims], const float* cos_sin, std::int64_t position,
                                          int vlane) {
  const float* row = cos_sin + position * kRopeDim + (vlane - kFirstRopeLane) * kPairsPerLane;
  const float4* cos4 = reinterpret_cast<const float4*>(row);
  const float4* sin4 = reinterpret_cast<const float4*>(row + kRopePairs);
  const float4 c0 = __ldg(cos4), c1 = __ldg(cos4 + 1), s0 = __ldg(sin4), s1 = __ldg(sin4 + 1);
  const float c[kPairsPerLane] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  const float s[kPairsPerLane] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
#pragma unroll
  for (int p = 0; p < kPairsPerLane; ++p) rope_pair(x[2 * p], x[2 * p + 1], c[p], s[p]);
}

}  // namespace kvc::kernels::detail
