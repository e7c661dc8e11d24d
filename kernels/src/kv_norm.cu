// kv_norm.cu: standalone kv_norm (docs/contract.md §2 RMSNorm with weight, §4 kv_norm).
//
// One warp per row, grid-strided. out may alias kv: each lane reads its 16 dims before writing the
// same 16 dims, and no other lane or warp touches them, so plain (not read-only) loads are used.
#include "kvc/kernels/kv_norm.h"

#include "launch_config.h"
#include "rms_norm.cuh"

namespace kvc::kernels {
namespace {

using namespace detail;

template <bool kVector>
__global__ void __launch_bounds__(kThreadsPerBlock)
    kv_norm_kernel(const std::uint16_t* kv, std::uint16_t* out, const std::uint16_t* weight, bool weight_aligned,
                   std::int64_t rows, float eps) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / kWarpLanes;
  if (row >= rows) return;
  float w[1][kLaneDims];
  load_norm_weight(weight, weight_aligned, lane, w[0]);
  for (; row < rows; row += static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock) {
    const std::int64_t offset = row * kHeadDim + lane * kLaneDims;
    float x[1][kLaneDims];
    if constexpr (kVector) {
      widen<false>(load_lane_bits(kv + offset), x[0]);
    } else {
#pragma unroll
      for (int i = 0; i < kLaneDims; ++i) x[0][i] = bf16_bits_to_float(kv[offset + i]);
    }
    kv_norm_lanes<1>(x, w, eps);  // x now holds bf16 values: narrowing below is exact
    if constexpr (kVector) {
      store_lane_bits(out + offset, narrow<false>(x[0]));
    } else {
#pragma unroll
      for (int i = 0; i < kLaneDims; ++i) out[offset + i] = bf16_bits_from_float(x[0][i]);
    }
  }
}

}  // namespace

cudaError_t kv_norm(const KvNormParams& p, cudaStream_t stream) {
  if (p.rows <= 0) return cudaSuccess;
  const auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % kAlignment == 0; };
  const bool weight_aligned = aligned(p.weight);
  const unsigned blocks = grid_x(ceil_div(p.rows, kWarpsPerBlock));
  if (aligned(p.kv) && aligned(p.out))
    kv_norm_kernel<true><<<blocks, kThreadsPerBlock, 0, stream>>>(p.kv, p.out, p.weight, weight_aligned, p.rows, p.eps);
  else
    kv_norm_kernel<false>
        <<<blocks, kThreadsPerBlock, 0, stream>>>(p.kv, p.out, p.weight, weight_aligned, p.rows, p.eps);
  return cudaGetLastError();
}

}  // namespace kvc::kernels
