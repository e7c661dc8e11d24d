// legacy_insert.h: host API of the legacy Q+KV insert and the full-cache Q paths
// (docs/contract.md §4 legacy_insert).
//
// Per token t < tokens: every Q head is written (packed caches: heads [0, heads) normed/rotated as
// asked, heads [heads, out_heads) zero-filled; fp8_512: e4m3 codes with the reciprocal scale;
// bf16_512: bf16, which may be in place). KV rows t < rows.count go through the same device code
// as kv_only_insert. A token whose position is outside [0, max_pos) while its Q side needs the
// position (RoPE) keeps its q_out untouched, and its KV record is not written either.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kvc/kernels/kv_insert.h"

namespace kvc::kernels {

// Which grid the launch uses. Bytes never depend on it (each Q head and each KV row is one warp's
// work, with no cross-warp arithmetic); the choice exists for speed and so tests can force both.
enum class LegacyGrid : std::uint8_t {
  kAuto = 0,        // per-token below kTokenCutoff tokens, large-batch from there on
  kPerToken = 1,    // block (x = token, y = group of 8 work items of that token)
  kLargeBatch = 2,  // block (x = group of 8 tokens, y = work item): one item across 8 tokens
};

struct LegacyInsertParams {
  KvRows rows;  // rows.count = M <= tokens; rows.fp16 also selects binary16 for q
  CacheTarget cache;
  const void* q = nullptr;             // [tokens, heads, 512] 16-bit, 16-byte aligned
  void* q_out = nullptr;               // packed: [tokens, out_heads, 512] 16-bit; fp8_512: [tokens, heads, 512]
                                       // e4m3; bf16_512: [tokens, heads, 512] bf16, may equal q
  std::int64_t tokens = 0;             // N
  std::int64_t heads = 0;              // H
  std::int64_t out_heads = 0;          // packed: Hp (0 = no Q output); full caches: H
  const float* q_scale_inv = nullptr;  // fp8_512: one fp32 on the device
  float eps = 1e-6f;
  bool q_norm = true;
  bool q_rope = true;          // packed caches; the full-cache paths always rotate
  bool q_interleaved = false;  // packed caches: q and q_out in the chunk-interleaved order
  LegacyGrid grid = LegacyGrid::kAuto;
};

cudaError_t legacy_insert(const LegacyInsertParams& p, cudaStream_t stream);

}  // namespace kvc::kernels
