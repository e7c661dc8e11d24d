// store_case.h: StoreCase, the one description of a store-op problem (docs/contract.md §6.4).
//
// The store op writes packed records from rows that are already normed and rotated (SGLang's
// fused_store_cache): rows [N, 512] bf16, one index per row, a uint8 cache. Two cache shapes are
// accepted: ours, the 3-D view [num_blocks, block_size, 584 | 528] of the insert ops, and
// SGLang's, a 2-D [num_blocks, page bytes] tensor whose page is block_size records rounded up to
// a multiple of 576 bytes. Either way the records sit in the page exactly as in docs/contract.md
// §3.3 and §3.4; store_cache_geometry() gives the 3-D paged view that addresses them.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc {

// SGLang's flashmla pool pads every page to a multiple of this many bytes (one packed584 data
// region): page stride ceil(584 * bs / 576) * 576 (docs/contract.md §6.4).
inline constexpr std::int64_t kSglangPageUnitBytes = 576;

struct StoreCase {
  HostTensor rows;     // [N, 512] bf16, already normed and rotated
  HostTensor indices;  // [N] int32 or int64: row t goes to slot indices[t]; a negative index skips
  TensorMeta cache;    // uint8 [num_blocks, block_size, 584 | 528] or [num_blocks, page bytes]
  std::int64_t block_size = 0;
  bool kv_mxfp8 = false;  // packed528 when set, packed584 otherwise

  std::int64_t num_rows() const { return rows.meta.rank() >= 1 ? rows.meta.size(0) : 0; }
  // indices[t], widened from int32 when the indices are int32.
  std::int64_t index(std::int64_t t) const {
    return indices.meta.dtype == DType::kI32 ? indices.load<std::int32_t>(t) : indices.load<std::int64_t>(t);
  }
};

inline RecordFormat store_format(const StoreCase& c) {
  return c.kv_mxfp8 ? RecordFormat::kPacked528 : RecordFormat::kPacked584;
}

// SGLang's page stride for `block_size` records of format f: ceil(record * bs / 576) * 576 bytes.
inline std::int64_t sglang_page_stride_bytes(RecordFormat f, std::int64_t block_size) {
  const std::int64_t dense = layout_of(f).dense_page_bytes(block_size);
  return (dense + kSglangPageUnitBytes - 1) / kSglangPageUnitBytes * kSglangPageUnitBytes;
}

// The 3-D paged view of the store cache: pages of block_size records, page stride = stride(0).
// Meaningful for a cache of rank 2 or 3 with well-formed metadata (validate_store_rotated).
inline CacheGeometry store_cache_geometry(const StoreCase& c) {
  const TensorMeta& m = c.cache;
  const RecordLayout& l = layout_of(store_format(c));
  CacheGeometry g;
  g.dtype = m.dtype;
  g.rank = 3;
  g.num_blocks = m.rank() >= 1 ? m.size(0) : 0;
  g.block_size = c.block_size;
  g.width = l.record_width;
  g.stride0 = m.rank() >= 1 ? m.stride(0) : 0;
  g.stride1 = m.rank() == 3 ? m.stride(1) : l.record_width;
  g.stride2 = 1;
  g.offset_bytes = m.offset_bytes;
  g.device = m.device;
  return g;
}

}  // namespace kvc
