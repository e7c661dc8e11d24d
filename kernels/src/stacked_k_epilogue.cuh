// stacked_k_epilogue.cuh: the stacked op's per-head K epilogue on the device, shared by the
// epilogue kernel of the per-layer and stacked paths (stacked_ctx_kv.cu) and the fused kernel
// (stacked_ctx_kv_fused.cu), so that the three paths run the same code after the projection.
//
// One warp finishes one (token, layer, kv head): the head's stored K sits widened in `e` (shared
// memory); the sum of squares is taken in the declared order (docs/contract.md §4.5 step 2,
// §6.2.1): sequentially by lane 0 (the contract's chain), or as the lane tree (each lane its
// ceil(hd/32) contiguous dims with fma, then the §1.3 butterfly); r is the correctly rounded rsqrt
// or the approximate reciprocal (PTX sqrt.approx, then a correctly rounded division); then every
// lane normalises and rotates its NeoX pairs (d, d + hd/2) under the declared contraction with
// explicitly rounded intrinsics, storing each value rounded to D into the pool. Every policy is a
// kernel argument, so its branch is uniform across the warp and costs a predicate, not a
// divergence.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kvc/kernels/device_numerics.cuh"
#include "kvc/stacked_profile.h"

namespace kvc::kernels::detail {

__device__ __forceinline__ float stacked_widen(std::uint16_t v, bool fp16) {
  return fp16 ? fp16_bits_to_float(v) : bf16_bits_to_float(v);
}
__device__ __forceinline__ std::uint16_t stacked_narrow(float v, bool fp16) {
  return fp16 ? fp16_bits_from_float(v) : bf16_bits_from_float(v);
}

inline constexpr unsigned kStackedFullMask = 0xFFFFFFFFu;

// Whether token t lies in its row's committed prefix (prefix-valid writes, docs/contract.md
// §4.5): always without commit lengths; token t is (t / S, t % S) of cache_loc [B, S].
__device__ __forceinline__ bool stacked_committed(const std::int64_t* commit_lens, std::int64_t row_length,
                                                  std::int64_t t) {
  return commit_lens == nullptr || t % row_length < commit_lens[t / row_length];
}

// The declared epilogue policies (kvc::StackedProfile's rope, reduction and reciprocal) as the
// kernels take them. All false: the contract's order.
struct StackedEpiloguePolicies {
  bool rope_fma_pair = false;
  bool lane_tree = false;  // also what an unspecified reduction runs
  bool approximate_reciprocal = false;
};

inline StackedEpiloguePolicies stacked_epilogue_policies(const StackedProfile& p) {
  StackedEpiloguePolicies e;
  e.rope_fma_pair = p.rope == StackedRope::kCudaFmaPair;
  e.lane_tree = p.reduction != KNormReduction::kSequential;
  e.approximate_reciprocal = p.reciprocal == KNormReciprocal::kApproximate;
  return e;
}

// The K-norm's sum of squares over e[0..hd), the same value in every lane. Sequential: lane 0's
// fma chain in dim order, broadcast. Lane tree: lane L's chain over [L k, min(hd, (L + 1) k)),
// k = ceil(hd / 32) (empty lanes hold 0), then the butterfly of docs/contract.md §1.3 (masks 16,
// 8, 4, 2, 1, acc[L] + acc[L xor m]: IEEE addition commutes, so every lane ends with one value).
__device__ __forceinline__ float stacked_sum_of_squares(const float* e, int hd, int lane, bool lane_tree) {
  float acc = 0.0f;
  if (lane_tree) {
    const int per_lane = (hd + kWarpLanes - 1) / kWarpLanes;
    const int end = min(hd, (lane + 1) * per_lane);
    for (int d = lane * per_lane; d < end; ++d) acc = __fmaf_rn(e[d], e[d], acc);
    for (int m = kWarpLanes / 2; m >= 1; m /= 2) acc = __fadd_rn(acc, __shfl_xor_sync(kStackedFullMask, acc, m));
    return acc;
  }
  if (lane == 0)
    for (int d = 0; d < hd; ++d) acc = __fmaf_rn(e[d], e[d], acc);
  return __shfl_sync(kStackedFullMask, acc, 0);
}

// r from ms + eps: rsqrt_rn, or the approximate reciprocal: PTX sqrt.approx.f32 (relative error
// <= 2^-23), then the correctly rounded division 1/s (docs/contract.md §6.2.1: within 4 ulps).
__device__ __forceinline__ float stacked_k_norm_reciprocal(float mean_eps, bool approximate) {
  if (!approximate) return __frsqrt_rn(mean_eps);
  float root;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(root) : "f"(mean_eps));
  return __fdiv_rn(1.0f, root);
}

// One NeoX pair under the declared contraction: the contract's (rope_pair, docs/contract.md §2.7)
// or the CUDA pair, whose second output is fma(b, c, fl(a*s)).
__device__ __forceinline__ void stacked_rotate_pair(float& a, float& b, float c, float s, bool fma_pair) {
  if (!fma_pair) {
    rope_pair(a, b, c, s);
    return;
  }
  const float first = __fmaf_rn(a, c, -__fmul_rn(b, s));
  const float second = __fmaf_rn(b, c, __fmul_rn(a, s));
  a = first;
  b = second;
}

// The K-norm and the NeoX rotation of one head, by one whole warp (every lane calls it). `e`: the
// head's stored K widened (hd floats, read only); `k_dst`: where the rotated K goes.
__device__ __forceinline__ void stacked_k_norm_rope_warp(const float* e, int hd, int lane,
                                                         const std::uint16_t* k_norm_weight, bool weight_fp16,
                                                         float eps, const float* cs, bool fp16, std::uint16_t* k_dst,
                                                         StackedEpiloguePolicies policies) {
  const float sum = stacked_sum_of_squares(e, hd, lane, policies.lane_tree);
  const float inv_hd = __fdiv_rn(1.0f, static_cast<float>(hd));
  const float r = stacked_k_norm_reciprocal(__fmaf_rn(sum, inv_hd, eps), policies.approximate_reciprocal);
  const int half = hd / 2;
  for (int d = lane; d < half; d += kWarpLanes) {
    // The stored normed K (rounded to D), then the rotation, then the stored rotated K.
    float first = stacked_widen(
        stacked_narrow(__fmul_rn(__fmul_rn(e[d], r), stacked_widen(k_norm_weight[d], weight_fp16)), fp16), fp16);
    float second = stacked_widen(
        stacked_narrow(__fmul_rn(__fmul_rn(e[d + half], r), stacked_widen(k_norm_weight[d + half], weight_fp16)), fp16),
        fp16);
    stacked_rotate_pair(first, second, cs[d], cs[half + d], policies.rope_fma_pair);
    k_dst[d] = stacked_narrow(first, fp16);
    k_dst[d + half] = stacked_narrow(second, fp16);
  }
}

}  // namespace kvc::kernels::detail
