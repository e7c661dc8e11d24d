// kv_insert.h: host API of the KV-only insert (docs/contract.md §3, §4 kv_only_insert).
//
// Plain structs of device pointers and geometry, already validated by the caller (the C ABI in
// kernel_abi.cpp validates metadata with kvc::validate_insert). Values are not validated on the
// host: the kernels skip, on the device, every row whose slot lies outside [0, capacity) or whose
// position lies outside [0, max_pos), so no value can make them write out of bounds.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kvc/contract.h"

namespace kvc::kernels {

// The cache the records go to. Packed formats address a page as bytes (token data, then scales);
// full caches address row `page + i * token_stride_bytes`.
struct CacheTarget {
  void* base = nullptr;  // element [0, 0, 0]; 16-byte aligned
  RecordFormat format = RecordFormat::kPacked584;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;
  std::int64_t page_stride_bytes = 0;   // 16-byte multiple
  std::int64_t token_stride_bytes = 0;  // full caches: 16-byte multiple
  const float* fp8_scale = nullptr;     // fp8_512: one fp32 on the device
};

// The KV rows: rows t < count are inserted; rows past count are never read.
struct KvRows {
  const void* kv = nullptr;                 // [>= count, 512] 16-bit, 16-byte aligned
  bool fp16 = false;                        // legacy op's fp16 path: every 16-bit rounding is binary16
  std::int64_t count = 0;                   // M = slot_mapping.size(0)
  const std::int64_t* slots = nullptr;      // [count]
  const std::int64_t* positions = nullptr;  // [>= count]
  const float* cos_sin = nullptr;           // [max_pos, 64], 16-byte aligned
  std::int64_t max_pos = 0;
};

// kv_norm fused in front of the insert (docs/contract.md §2 RMSNorm): on when weight != nullptr.
struct KvNormFusion {
  const std::uint16_t* weight = nullptr;  // [512] bf16, any 2-byte alignment
  float eps = 1e-6f;
};

struct KvOnlyInsertParams {
  KvRows rows;
  CacheTarget cache;
  KvNormFusion norm;
  // Launch shape, for tuning only (bytes never depend on it); 0 = the library default.
  // rows_per_warp: row steps (1 or 2) a warp loads before encoding the first.
  // lanes_per_row: 32 (a warp per row) or 16 (a half-warp per row, two rows per warp).
  // blocks_per_sm: the persistent grid's blocks per SM (0 = as many as fit, < 0 = no persistent
  // grid: one loop step per warp).
  int rows_per_warp = 0;
  int lanes_per_row = 0;
  int blocks_per_sm = 0;
};

// Enqueues the insert on `stream`; returns the launch error, if any (cudaSuccess for count == 0,
// which launches nothing). The KV-only op takes bf16 rows only: rows.fp16 gives
// cudaErrorInvalidValue (the fp16 path exists for the legacy op, which shares the device code).
cudaError_t kv_only_insert(const KvOnlyInsertParams& p, cudaStream_t stream);

}  // namespace kvc::kernels
