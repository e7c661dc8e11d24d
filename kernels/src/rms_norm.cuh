// rms_norm.cuh: lane-ordered RMSNorm of one 512-dim row (docs/contract.md §2).
//
// The order of operations is the contract's: each (virtual) lane fma-chains the squares of its 16
// dims in order from 0, the lanes sum with a butterfly over masks 16, 8, 4, 2, 1 (every lane ends
// with the same S because IEEE addition is commutative), r = rsqrt_rn(fma(S, 1/512, eps)).
// A thread holding kV virtual lanes (v = p*kV + j) does the steps with mask >= kV as shuffles with
// thread p ^ (mask / kV) and the smaller ones inside its registers: the same additions in the same
// tree, so the same S.
#pragma once

#include "kvc/contract.h"
#include "lane_io.cuh"

namespace kvc::kernels::detail {

// Every thread of the warp must call it (full-mask shuffles); for kV = 2 the shuffles stay inside
// each half-warp (masks <= 8), so the two rows of a warp do not mix.
template <int kV>
__device__ __forceinline__ float rms_inverse(const float (&x)[kV][kLaneDims], float eps) {
  float acc[kV];
#pragma unroll
  for (int j = 0; j < kV; ++j) {
    acc[j] = 0.0f;
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i) acc[j] = __fmaf_rn(x[j][i], x[j][i], acc[j]);
  }
#pragma unroll
  for (int mask = kWarpLanes / 2; mask >= 1; mask >>= 1) {
    float next[kV];
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      // (index kept in range for the shuffle steps, where it is not used)
      const float other = mask >= kV ? __shfl_xor_sync(kFullMask, acc[j], mask / kV) : acc[(j ^ mask) & (kV - 1)];
      next[j] = __fadd_rn(acc[j], other);
    }
#pragma unroll
    for (int j = 0; j < kV; ++j) acc[j] = next[j];
  }
  constexpr float kInvHeadDim = 1.0f / static_cast<float>(kHeadDim);  // 2^-9, exact
  return __frsqrt_rn(__fmaf_rn(acc[0], kInvHeadDim, eps));
}

// Q-norm: e = fl(e * r).
__device__ __forceinline__ void q_norm_lane(float (&x)[1][kLaneDims], float eps) {
  const float r = rms_inverse<1>(x, eps);
#pragma unroll
  for (int i = 0; i < kLaneDims; ++i) x[0][i] = __fmul_rn(x[0][i], r);
}

// kv_norm: e = f32(bf(fl(fl(e * r) * f32(w)))).
template <int kV>
__device__ __forceinline__ void kv_norm_lanes(float (&x)[kV][kLaneDims], const float (&w)[kV][kLaneDims], float eps) {
  const float r = rms_inverse<kV>(x, eps);
#pragma unroll
  for (int j = 0; j < kV; ++j) {
#pragma unroll
    for (int i = 0; i < kLaneDims; i += 2) {
      const std::uint32_t b = bf16x2_bits_from_float(__fmul_rn(__fmul_rn(x[j][i], r), w[j][i]),
                                                     __fmul_rn(__fmul_rn(x[j][i + 1], r), w[j][i + 1]));
      x[j][i] = __uint_as_float(b << 16);
      x[j][i + 1] = __uint_as_float(b & 0xFFFF0000u);
    }
  }
}

// The 16 weights of virtual lane `vlane` of a [512] bf16 vector, widened; `aligned` selects
// 16-byte vector loads (the weight's alignment is not a validation rule, so the scalar path must
// exist).
__device__ __forceinline__ void load_norm_weight(const std::uint16_t* weight, bool aligned, int vlane,
                                                 float (&w)[kLaneDims]) {
  const std::uint16_t* p = weight + vlane * kLaneDims;
  if (aligned) {
    widen<false>(
        lane_bits_from_vectors(__ldg(reinterpret_cast<const uint4*>(p)), __ldg(reinterpret_cast<const uint4*>(p) + 1)),
        w);
  } else {
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i) w[i] = bf16_bits_to_float(__ldg(p + i));
  }
}

}  // namespace kvc::kernels::detail
