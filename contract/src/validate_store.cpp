// validate_store.cpp: the store op's rules (see validate_store.h).
#include "kvc/validate_store.h"

#include <algorithm>
#include <string>

#include "rule_order.h"
#include "tensor_rules.h"

namespace kvc {
namespace {

using detail::aligned;
using detail::shape_text;

// One past the last byte the store cache can touch: the tensor's own extent, every page
// (num_blocks * stride), and the last page's records (a stride below the dense page reaches past
// num_blocks * stride). Nothing on int64 overflow.
CheckedI64 store_view_end(const StoreCase& c) {
  const CacheGeometry g = store_cache_geometry(c);
  const CheckedI64 span = c.cache.checked_span_bytes();
  const CheckedI64 pages = g.checked_backing_bytes();
  if (!span || !pages) return std::nullopt;
  if (g.num_blocks == 0) return std::max(*span, *pages);
  const CheckedI64 records_end =
      checked_add(checked_mul_add(g.num_blocks - 1, g.checked_page_stride_bytes(), g.offset_bytes),
                  checked_mul(g.block_size, std::int64_t{layout_of(store_format(c)).record_bytes()}));
  if (!records_end) return std::nullopt;
  return std::max({*span, *pages, *records_end});
}

Status malformed(const char* name, const TensorMeta& m) {
  return Error(ErrorCode::kTensorMetaInvalid,
               std::string(name) + " " + shape_text(m) + ": rank, sign, dtype or extent is malformed");
}

Status check_metadata(const StoreCase& c) {
  if (c.rows.present && !c.rows.meta.well_formed()) return malformed("rows", c.rows.meta);
  if (c.indices.present && !c.indices.meta.well_formed()) return malformed("indices", c.indices.meta);
  if (!c.cache.well_formed()) return malformed("kv_cache", c.cache);
  return Status::Ok();
}

Status check_inputs_cover(const StoreCase& c) {
  if (Status s = detail::check_bytes_cover("rows", c.rows); !s.ok()) return s;
  return detail::check_bytes_cover("indices", c.indices);
}

// Cache dtype, rank, block size and the shape rules of each of the two conventions.
Status check_cache_shape(const StoreCase& c) {
  const TensorMeta& m = c.cache;
  if (m.dtype != DType::kU8)
    return Error(ErrorCode::kStoreCacheNotPacked, "cache dtype code " + std::to_string(static_cast<int>(m.dtype)));
  if (m.rank() != 2 && m.rank() != 3) return Error(ErrorCode::kStoreCacheRank, "cache is " + shape_text(m));
  if (c.block_size <= 0) return Error(ErrorCode::kBlockSizeNonPositive, "block_size " + std::to_string(c.block_size));
  const RecordLayout& l = layout_of(store_format(c));
  if (m.rank() == 3) {
    if (m.size(1) != c.block_size)
      return Error(ErrorCode::kBlockSizeMismatch,
                   "size(1) " + std::to_string(m.size(1)) + " vs block_size " + std::to_string(c.block_size));
    if (m.size(2) != l.record_width)
      return Error(ErrorCode::kCacheWidth, "width " + std::to_string(m.size(2)) + " but " + std::string(l.name) +
                                               " (kv_mxfp8=" + (c.kv_mxfp8 ? "true" : "false") + ") needs " +
                                               std::to_string(l.record_width));
    if (m.stride(2) != 1) return Error(ErrorCode::kCacheStride2, "stride(2) " + std::to_string(m.stride(2)));
  } else {
    if (m.stride(1) != 1)
      return Error(ErrorCode::kCacheStride2, "stride(1) of a 2-D cache " + std::to_string(m.stride(1)));
    const CheckedI64 dense = checked_mul(c.block_size, std::int64_t{l.record_bytes()});
    if (!dense) return Error(ErrorCode::kCacheGeometryInvalid, "block_size " + std::to_string(c.block_size));
    if (m.size(1) < *dense)
      return Error(ErrorCode::kStorePageBytesTooSmall, std::to_string(m.size(1)) + " bytes per page, " +
                                                           std::to_string(c.block_size) + " " + std::string(l.name) +
                                                           " records need " + std::to_string(*dense));
  }
  const CacheGeometry g = store_cache_geometry(c);
  if (!checked_mul(g.num_blocks, g.block_size) || !store_view_end(c))
    return Error(ErrorCode::kCacheGeometryInvalid, std::to_string(g.num_blocks) + " pages x " +
                                                       std::to_string(g.block_size) + ", page stride " +
                                                       std::to_string(g.stride0) + ": an extent past int64");
  if (g.page_stride_bytes() > kMaxPackedPageStride)
    return Error(ErrorCode::kPageStrideTooLarge, std::to_string(g.page_stride_bytes()) + " bytes");
  return Status::Ok();
}

Status check_contract(const StoreCase& c) {
  if (!c.rows.present) return Error(ErrorCode::kKvShape, "rows are missing");
  if (c.rows.meta.dtype != DType::kBF16) return Error(ErrorCode::kKvDtype, "the store op takes bf16 rows only");
  if (c.rows.meta.rank() != 2 || c.rows.meta.size(1) != kHeadDim)
    return Error(ErrorCode::kKvShape, "rows are " + shape_text(c.rows.meta));
  if (!c.rows.meta.contiguous())
    return Error(ErrorCode::kKvNotContiguous, "row stride " + std::to_string(c.rows.meta.stride(0)));
  const std::int64_t n = c.rows.meta.size(0);

  const TensorMeta& im = c.indices.meta;
  if (!c.indices.present || (im.dtype != DType::kI32 && im.dtype != DType::kI64) || im.rank() != 1 || !im.contiguous())
    return Error(ErrorCode::kStoreIndicesInvalid, c.indices.present ? "indices are " + shape_text(im) + " of dtype " +
                                                                          std::to_string(static_cast<int>(im.dtype))
                                                                    : "indices are missing");
  if (im.size(0) != n)
    return Error(ErrorCode::kStoreIndicesRowMismatch,
                 std::to_string(im.size(0)) + " indices for " + std::to_string(n) + " rows");

  const int dev = c.rows.meta.device;
  if (im.device != dev) return Error(ErrorCode::kDeviceMismatch, "indices on device " + std::to_string(im.device));
  if (c.cache.device != dev)
    return Error(ErrorCode::kDeviceMismatch, "kv_cache on device " + std::to_string(c.cache.device));
  return check_cache_shape(c);
}

Status check_strict(const StoreCase& c, ValueAccess access) {
  const CacheGeometry g = store_cache_geometry(c);
  const RecordLayout& l = layout_of(store_format(c));
  if (g.page_stride_bytes() < l.dense_page_bytes(g.block_size))
    return Error(ErrorCode::kPageStrideBelowDense, std::to_string(g.page_stride_bytes()) + " < " +
                                                       std::to_string(l.dense_page_bytes(g.block_size)) + " bytes");
  struct Aligned {
    const char* what;
    std::int64_t bytes;
  };
  for (const Aligned& a : {Aligned{"rows base", c.rows.meta.offset_bytes}, Aligned{"kv_cache base", g.offset_bytes},
                           Aligned{"page stride", g.page_stride_bytes()}})
    if (!aligned(a.bytes))
      return Error(ErrorCode::kMisaligned, std::string(a.what) + " " + std::to_string(a.bytes) + " bytes");
  if (access == ValueAccess::kMetadataOnly) return Status::Ok();
  if (const auto r = detail::first_repeated_slot(c.num_rows(), [&](std::int64_t t) { return c.index(t); }))
    return Error(ErrorCode::kDuplicateSlot, "slot " + std::to_string(r->slot) + " at rows " +
                                                std::to_string(r->first_row) + " and " + std::to_string(r->second_row));
  return Status::Ok();
}

// Enforced at every level when values are available: an index past the cache would make even
// the oracle write out of bounds.
Status check_memory_safety(const StoreCase& c, ValidationLevel) {
  const CacheGeometry g = store_cache_geometry(c);
  const std::int64_t capacity = g.num_blocks * g.block_size;
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    const std::int64_t s = c.index(t);
    if (s >= capacity)
      return Error(ErrorCode::kSlotOutOfRange, "index " + std::to_string(s) + " at row " + std::to_string(t) +
                                                   ", capacity " + std::to_string(g.num_blocks) + " x " +
                                                   std::to_string(g.block_size));
  }
  return Status::Ok();
}

}  // namespace

Status validate_store_rotated(const StoreCase& c, ValidationLevel level, ValueAccess access) {
  return detail::validate_in_rule_order(c, level, access,
                                        detail::RuleSteps<StoreCase>{check_metadata, check_inputs_cover, check_contract,
                                                                     check_strict, check_memory_safety});
}

Status validate_store_backing(const StoreCase& c, const std::vector<std::uint8_t>& backing) {
  if (!c.cache.well_formed()) return malformed("kv_cache", c.cache);
  if (Status s = check_cache_shape(c); !s.ok()) return s;
  const std::int64_t end = *store_view_end(c);
  if (static_cast<std::int64_t>(backing.size()) < end)
    return Error(ErrorCode::kBackingTooSmall,
                 std::to_string(backing.size()) + " bytes, the view reaches byte " + std::to_string(end));
  return Status::Ok();
}

}  // namespace kvc
