// store_rotated.h: host API of the store op (docs/contract.md §6.4): rows already normed and
// rotated -> packed584 or packed528 records, under the contract's policies (profile vllm).
//
// Plain structs of device pointers and geometry, already validated by the caller (the C ABI in
// kernel_abi.cpp validates metadata with kvc::validate_store_rotated). Index values are not
// validated on the host: the kernel skips, on the device, every row whose index lies outside
// [0, capacity) (negative indices are the contract's "skip", larger ones cannot be written).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kvc/kernels/kv_insert.h"

namespace kvc::kernels {

struct StoreRotatedParams {
  const void* rows = nullptr;     // [count, 512] bf16, 16-byte aligned
  const void* indices = nullptr;  // [count] int32 or int64
  bool indices_int32 = false;
  std::int64_t count = 0;
  CacheTarget cache;  // format kPacked584 or kPacked528
};

// Enqueues the store on `stream`; returns the launch error, if any (cudaSuccess for count == 0,
// which launches nothing; cudaErrorInvalidValue for a full-cache format).
cudaError_t store_rotated(const StoreRotatedParams& p, cudaStream_t stream);

}  // namespace kvc::kernels
