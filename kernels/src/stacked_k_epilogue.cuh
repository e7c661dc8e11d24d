// stacked_k_epilogue.cuh: the stacked op's per-head K epilogue on the device, shared by the
// epilogue kernel of the per-layer and stacked paths (stacked_ctx_kv.cu) and the fused kernel
// (stacked_ctx_kv_fused.cu), so that the three paths run the same code after the projection.
//
// One warp finishes one (token, layer, kv head): the head's stored K sits widened in `e` (shared
// memory); lane 0 sums the squares in dim order (the contract's sequential chain,
// docs/contract.md §4.5 step 2: no lanes, no tree) and takes the correctly rounded rsqrt; then
// every lane normalises and rotates its NeoX pairs (d, d + hd/2) with explicitly rounded
// intrinsics, storing each value rounded to D into the pool. Moved here unchanged from
// stacked_ctx_kv.cu (the helpers widen/narrow, the mask and the body of the epilogue task).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kvc/kernels/device_numerics.cuh"

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

// The K-norm and the NeoX rotation of one head, by one whole warp (every lane calls it). `e`: the
// head's stored K widened (hd floats, read only); `k_dst`: where the rotated K goes.
__device__ __forceinline__ void stacked_k_norm_rope_warp(const float* e, int hd, int lane,
                                                         const std::uint16_t* k_norm_weight, bool weight_fp16,
                                                         float eps, const float* cs, bool fp16, std::uint16_t* k_dst) {
  float r = 0.0f;
  if (lane == 0) {
    float sum = 0.0f;
    for (int d = 0; d < hd; ++d) sum = __fmaf_rn(e[d], e[d], sum);
    const float inv_hd = __fdiv_rn(1.0f, static_cast<float>(hd));
    r = __frsqrt_rn(__fmaf_rn(sum, inv_hd, eps));
  }
  r = __shfl_sync(kStackedFullMask, r, 0);
  const int half = hd / 2;
  for (int d = lane; d < half; d += kWarpLanes) {
    // The stored normed K (rounded to D), then the rotation, then the stored rotated K.
    float first = stacked_widen(
        stacked_narrow(__fmul_rn(__fmul_rn(e[d], r), stacked_widen(k_norm_weight[d], weight_fp16)), fp16), fp16);
    float second = stacked_widen(
        stacked_narrow(__fmul_rn(__fmul_rn(e[d + half], r), stacked_widen(k_norm_weight[d + half], weight_fp16)), fp16),
        fp16);
    rope_pair(first, second, cs[d], cs[half + d]);
    k_dst[d] = stacked_narrow(first, fp16);
    k_dst[d + half] = stacked_narrow(second, fp16);
  }
}

}  // namespace kvc::kernels::detail
