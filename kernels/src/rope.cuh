// rope.cuh: GPT-J RoPE of dims [448, 512) on the (virtual) lanes that own them
// (docs/contract.md §2).
//
// Lane v in 28..31 holds pairs j = 8(v-28) .. 8(v-28)+7 of dims (448+2j, 449+2j); it reads the 8
// cosines and 8 sines it needs from the position's 64-float row with four 16-byte loads. Loading
// and rotating are separate steps so that a kernel can issue the table loads together with the
// row's own loads: the table row depends on the position, and waiting for the position, then for
// the table, then computing is two memory round trips where one suffices.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "lane_io.cuh"

namespace kvc::kernels::detail {

inline constexpr int kPairsPerLane = kLaneDims / 2;

__device__ __forceinline__ bool is_rope_lane(int vlane) { return vlane >= kFirstRopeLane; }

// The 8 cosines and 8 sines of one RoPE lane at one position.
struct RopeCoeffs {
  float4 c0, c1, s0, s1;
};

// Loads RoPE lane `vlane`'s coefficients (28..31) at `position` (must be in the table).
__device__ __forceinline__ RopeCoeffs load_rope_coeffs(const float* cos_sin, std::int64_t position, int vlane) {
  const float* row = cos_sin + position * kRopeDim + (vlane - kFirstRopeLane) * kPairsPerLane;
  const float4* cos4 = reinterpret_cast<const float4*>(row);
  const float4* sin4 = reinterpret_cast<const float4*>(row + kRopePairs);
  return RopeCoeffs{__ldg(cos4), __ldg(cos4 + 1), __ldg(sin4), __ldg(sin4 + 1)};
}

// Rotates the 16 dims of a RoPE lane with its loaded coefficients.
__device__ __forceinline__ void rope_lane(float (&x)[kLaneDims], const RopeCoeffs& k) {
  const float c[kPairsPerLane] = {k.c0.x, k.c0.y, k.c0.z, k.c0.w, k.c1.x, k.c1.y, k.c1.z, k.c1.w};
  const float s[kPairsPerLane] = {k.s0.x, k.s0.y, k.s0.z, k.s0.w, k.s1.x, k.s1.y, k.s1.z, k.s1.w};
#pragma unroll
  for (int p = 0; p < kPairsPerLane; ++p) rope_pair(x[2 * p], x[2 * p + 1], c[p], s[p]);
}

}  // namespace kvc::kernels::detail
