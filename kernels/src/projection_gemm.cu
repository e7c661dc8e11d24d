// projection_gemm.cu: the exact-order projection GEMM on CUDA cores (see projection_gemm.h).
//
// A register-tiled GEMM: a block computes a 64-token x 64-row tile, each of its 256 threads a 4 x 4
// micro-tile, streaming the hidden dimension through shared memory 16 columns at a time. Every
// accumulator runs acc = __fmaf_rn(x[t][c], w[r][c], acc) for c in increasing order from +0, the
// contract's chain exactly: the tiling splits the loop, never reorders it, and the last tile
// stops at `hidden` (no padding terms: fma(0, 0, -0) would turn a -0 sum into +0).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kvc/kernels/device_numerics.cuh"
#include "launch_config.h"
#include "projection_gemm.h"

namespace kvc::kernels::detail {
namespace {

constexpr int kTileTokens = 64;
constexpr int kTileRows = 64;
constexpr int kTileDepth = 16;
constexpr int kMicro = 4;
constexpr int kGemmThreads = (kTileTokens / kMicro) * (kTileRows / kMicro);  // 256

template <bool Fp16>
__device__ __forceinline__ float widen(std::uint16_t v) {
  return Fp16 ? fp16_bits_to_float(v) : bf16_bits_to_float(v);
}

__device__ __forceinline__ std::uint16_t narrow(float v, bool fp16) {
  return fp16 ? fp16_bits_from_float(v) : bf16_bits_from_float(v);
}

template <bool XFp16, bool WFp16>
__global__ void __launch_bounds__(kGemmThreads) exact_order_gemm_kernel(GemmOperands g) {
  __shared__ float xs[kTileDepth][kTileTokens];
  __shared__ float ws[kTileDepth][kTileRows];
  const int tid = static_cast<int>(threadIdx.x);
  const int tm = tid / (kTileRows / kMicro);  // micro-tile row (tokens)
  const int tn = tid % (kTileRows / kMicro);  // micro-tile column (weight rows): adjacent threads, adjacent rows
  const std::int64_t t0 = static_cast<std::int64_t>(blockIdx.y) * kTileTokens;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * kTileRows;

  float acc[kMicro][kMicro];
#pragma unroll
  for (int i = 0; i < kMicro; ++i)
#pragma unroll
    for (int j = 0; j < kMicro; ++j) acc[i][j] = 0.0f;

  for (std::int64_t c0 = 0; c0 < g.hidden; c0 += kTileDepth) {
    const int depth = static_cast<int>(g.hidden - c0 < kTileDepth ? g.hidden - c0 : kTileDepth);
    // 64 x 16 values of each operand, 4 per thread; out-of-range entries are never read below.
#pragma unroll
    for (int k = 0; k < (kTileTokens * kTileDepth) / kGemmThreads; ++k) {
      const int e = tid + k * kGemmThreads;
      const int row = e / kTileDepth;
      const int col = e % kTileDepth;
      const std::int64_t t = t0 + row;
      const std::int64_t r = r0 + row;
      xs[col][row] = (t < g.tokens && col < depth) ? widen<XFp16>(g.x[t * g.hidden + c0 + col]) : 0.0f;
      ws[col][row] = (r < g.rows && col < depth) ? widen<WFp16>(g.w[r * g.hidden + c0 + col]) : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < depth; ++k) {
      float a[kMicro], b[kMicro];
#pragma unroll
      for (int i = 0; i < kMicro; ++i) a[i] = xs[k][tm * kMicro + i];
#pragma unroll
      for (int j = 0; j < kMicro; ++j) b[j] = ws[k][tn * kMicro + j];
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = __fmaf_rn(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
    const std::int64_t t = t0 + tm * kMicro + i;
    if (t >= g.tokens) continue;
#pragma unroll
    for (int j = 0; j < kMicro; ++j) {
      const std::int64_t r = r0 + tn * kMicro + j;
      if (r >= g.rows) continue;
      float v = acc[i][j];
      if (g.bias != nullptr) v = __fadd_rn(v, widen<WFp16>(g.bias[r]));
      g.out[t * g.out_ld + r] = narrow(v, g.out_fp16);
    }
  }
}

}  // namespace

cudaError_t exact_order_gemm(const GemmOperands& g, cudaStream_t stream) {
  if (g.tokens == 0 || g.rows == 0) return cudaSuccess;
  const dim3 grid(grid_x(ceil_div(g.rows, kTileRows)), grid_y(ceil_div(g.tokens, kTileTokens)));
  if (static_cast<std::int64_t>(grid.y) * kTileTokens < g.tokens) return cudaErrorInvalidConfiguration;
  if (g.x_fp16 && g.w_fp16)
    exact_order_gemm_kernel<true, true><<<grid, kGemmThreads, 0, stream>>>(g);
  else if (g.x_fp16)
    exact_order_gemm_kernel<true, false><<<grid, kGemmThreads, 0, stream>>>(g);
  else if (g.w_fp16)
    exact_order_gemm_kernel<false, true><<<grid, kGemmThreads, 0, stream>>>(g);
  else
    exact_order_gemm_kernel<false, false><<<grid, kGemmThreads, 0, stream>>>(g);
  return cudaGetLastError();
}

}  // namespace kvc::kernels::detail
