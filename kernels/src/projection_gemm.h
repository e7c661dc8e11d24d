// projection_gemm.h: the stacked context-KV op's projection GEMMs (internal to kvc::kernels).
//
// out[t * out_ld + r] = round_D(fl(sum_c x[t][c] * w[r][c] + b[r])) for t < tokens, r < rows, with
// x [tokens, hidden] and w [rows, hidden] row-major 16-bit (bf16 or fp16 each), fp32 accumulation
// and one rounding to the output dtype.
//  - exact_order_gemm: CUDA cores; every element is the contract's chain acc = fma(x, w, acc) over
//    c = 0, 1, ..., hidden - 1 from +0, then fl(acc + b) (docs/contract.md §4.5), bit for bit.
//  - cublas_gemm: cuBLASLt, 16-bit inputs, CUBLAS_COMPUTE_32F, the bias epilogue; x and w of one
//    dtype. Its summation order is cuBLAS's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace kvc::kernels::detail {

struct GemmOperands {
  const std::uint16_t* x = nullptr;
  bool x_fp16 = false;
  std::int64_t tokens = 0;
  std::int64_t hidden = 0;
  const std::uint16_t* w = nullptr;
  bool w_fp16 = false;
  std::int64_t rows = 0;
  const std::uint16_t* bias = nullptr;  // [rows] in w's dtype, or null
  std::uint16_t* out = nullptr;
  std::int64_t out_ld = 0;  // elements between output rows (tokens)
  bool out_fp16 = false;
};

cudaError_t exact_order_gemm(const GemmOperands& g, cudaStream_t stream);

// "" on success, else what failed (a cuBLAS status or "no algorithm").
std::string cublas_gemm(const GemmOperands& g, cudaStream_t stream);

}  // namespace kvc::kernels::detail
