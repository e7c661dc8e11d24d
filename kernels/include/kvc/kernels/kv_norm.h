// kv_norm.h: host API of the standalone kv_norm (docs/contract.md §2 RMSNorm with weight, §4).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kvc::kernels {

struct KvNormParams {
  const std::uint16_t* kv = nullptr;      // [rows, 512] bf16, contiguous
  std::uint16_t* out = nullptr;           // [rows, 512] bf16, contiguous; may equal kv
  const std::uint16_t* weight = nullptr;  // [512] bf16
  std::int64_t rows = 0;
  float eps = 1e-6f;
};

// Any 2-byte alignment is accepted; 16-byte aligned rows take the vector path (same bytes).
cudaError_t kv_norm(const KvNormParams& p, cudaStream_t stream);

}  // namespace kvc::kernels
