// store_rotated.cpp: the store op and the packed record encoder (see store_rotated.h).
#include "kvc/oracle/store_rotated.h"

#include <algorithm>
#include <stdexcept>

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/parallel_rows.h"
#include "kvc/oracle/quantize.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/ue8m0.h"
#include "kvc/validate_store.h"

namespace kvc::oracle {
namespace {

void put16(std::vector<std::uint8_t>& b, std::int64_t off, std::uint16_t v) {
  b[static_cast<std::size_t>(off)] = static_cast<std::uint8_t>(v & 0xFF);
  b[static_cast<std::size_t>(off) + 1] = static_cast<std::uint8_t>(v >> 8);
}

// Rows may run on several threads when no two write the same byte: distinct non-negative
// indices, and pages no shorter than their records.
bool store_rows_write_disjoint_bytes(const StoreCase& c, const PagedCacheView& v) {
  if (v.page_stride_bytes < v.layout().dense_page_bytes(v.block_size)) return false;
  std::vector<std::int64_t> slots;
  slots.reserve(static_cast<std::size_t>(c.num_rows()));
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    if (const std::int64_t s = c.index(t); s >= 0) slots.push_back(s);
  std::sort(slots.begin(), slots.end());
  return std::adjacent_find(slots.begin(), slots.end()) == slots.end();
}

}  // namespace

PagedCacheView store_view(const StoreCase& c) {
  return PagedCacheView::of(store_cache_geometry(c), store_format(c), DType::kBF16);
}

void store_rotated_row(const std::uint16_t* row16, DType dt, const PagedCacheView& view, std::int64_t slot,
                       std::vector<std::uint8_t>& backing, const OracleOptions& o) {
  if (slot < 0) return;
  const RecordLayout& l = view.layout();
  float y[kHeadDim];
  for (int d = 0; d < kHeadDim; ++d) y[d] = widen16(row16[d], dt);
  const std::int64_t data = token_data_offset(view, slot);
  const std::int64_t scales = token_scale_offset(view, slot);
  const ScaleRules rules = scale_rules_of(o.profile);
  for (int k = 0; k < l.scale_blocks; ++k) {
    const float* block = y + k * l.quant_block_dims;
    const BlockScale s = block_scale(block, l.quant_block_dims, rules);
    for (int i = 0; i < l.quant_block_dims; ++i)
      backing[static_cast<std::size_t>(data + k * l.quant_block_dims + i)] = quantize(block[i] * s.inverse, o);
    backing[static_cast<std::size_t>(scales + k)] = s.byte;
  }
  // packed584's RoPE dims: bf() of the value (the input bits, NaN -> 0x7FFF) or the input bits.
  for (int d = l.fp8_dims; d < kHeadDim; ++d)
    put16(backing, data + dim_offset_in_data(view.format, d),
          o.profile.rope == RopePolicy::kRotate ? narrow16(y[d], dt) : row16[d]);
  if (l.scale_bytes > l.scale_blocks && o.profile.pad_byte == PadBytePolicy::kWritten)
    backing[static_cast<std::size_t>(scales + l.scale_blocks)] =
        o.mutation == OracleMutation::kScalePadOne ? 0x01 : kScalePadByte;
}

Status store_rotated(const StoreCase& c, std::vector<std::uint8_t>& backing, const OracleOptions& o) {
  if (Status s = validate_store_rotated(c, o.level); !s.ok()) return s;
  if (Status s = validate_store_backing(c, backing); !s.ok()) return s;
  const PagedCacheView view = store_view(c);
  const std::int64_t n = c.num_rows();
  const bool parallel = n >= 2 * kMinRowsPerThread && store_rows_write_disjoint_bytes(c, view);
  parallel_rows(n, parallel ? resolve_oracle_threads(o.threads) : 1, [&](std::int64_t begin, std::int64_t end) {
    std::uint16_t row[kHeadDim];
    for (std::int64_t t = begin; t < end; ++t) {
      for (int d = 0; d < kHeadDim; ++d) row[d] = c.rows.load<std::uint16_t>(t * kHeadDim + d);
      store_rotated_row(row, DType::kBF16, view, c.index(t), backing, o);
    }
  });
  return Status::Ok();
}

void rotated_row16(const InsertCase& c, std::int64_t row, const Profile& p, std::uint16_t* out) {
  const DType dt = c.kv.meta.dtype;
  if (p.rope == RopePolicy::kNone && !c.kv_norm_weight.present) {
    for (int d = 0; d < kHeadDim; ++d) out[d] = c.kv.load<std::uint16_t>(row * kHeadDim + d);
    return;
  }
  float x[kHeadDim];
  kv_row_before_rope(c, row, x);
  if (p.rope == RopePolicy::kRotate) rope_at_row_position(c, row, x);
  for (int d = 0; d < kHeadDim; ++d) out[d] = narrow16(x[d], dt);
}

StoreCase store_case_of(const InsertCase& c, const Profile& p) {
  const auto format = format_of(c);
  if (c.op != InsertOp::kKvOnly || c.kv.meta.dtype != DType::kBF16 || !format || !is_packed(*format))
    throw std::invalid_argument("store_case_of: only a KV-only case with bf16 kv on a packed cache is a store case");
  const std::int64_t m = c.num_inserted();
  StoreCase s;
  s.rows = make_tensor(DType::kBF16, {m, kHeadDim});
  std::vector<std::int64_t> slots(static_cast<std::size_t>(m));
  std::uint16_t row[kHeadDim];
  for (std::int64_t t = 0; t < m; ++t) {
    rotated_row16(c, t, p, row);
    for (int d = 0; d < kHeadDim; ++d) s.rows.store<std::uint16_t>(t * kHeadDim + d, row[d]);
    slots[static_cast<std::size_t>(t)] = c.slots.load<std::int64_t>(t);
  }
  s.indices = make_tensor_from(DType::kI64, slots, {m});
  s.cache.dtype = c.cache.dtype;
  s.cache.sizes = {c.cache.num_blocks, c.cache.block_size, c.cache.width};
  s.cache.strides = {c.cache.stride0, c.cache.stride1, c.cache.stride2};
  s.cache.offset_bytes = c.cache.offset_bytes;
  s.cache.device = c.cache.device;
  s.block_size = c.block_size;
  s.kv_mxfp8 = c.kv_mxfp8;
  return s;
}

}  // namespace kvc::oracle
