// bytes_moved.cpp: the traffic model of one insertion call (see bytes_moved.h).
#include "bytes_moved.h"

namespace kvc::bench {
namespace {

std::int64_t tensor_bytes(const TensorMeta& m) { return m.numel() * dtype_size(m.dtype); }

std::int64_t live_rows(const InsertCase& c) {
  std::int64_t live = 0;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (c.slots.load<std::int64_t>(t * c.slots.meta.stride(0)) >= 0) ++live;
  return live;
}

}  // namespace

BytesMoved operator+(const BytesMoved& a, const BytesMoved& b) {
  BytesMoved s;
  s.kv_read = a.kv_read + b.kv_read;
  s.slots_read = a.slots_read + b.slots_read;
  s.positions_read = a.positions_read + b.positions_read;
  s.cos_sin_read = a.cos_sin_read + b.cos_sin_read;
  s.records_written = a.records_written + b.records_written;
  s.q_read = a.q_read + b.q_read;
  s.q_written = a.q_written + b.q_written;
  s.scalars_read = a.scalars_read + b.scalars_read;
  s.norm_out_written = a.norm_out_written + b.norm_out_written;
  return s;
}

BytesMoved insert_bytes_moved(const InsertCase& c) {
  const std::int64_t live = live_rows(c);
  const std::int64_t kv_row_bytes = std::int64_t{kHeadDim} * dtype_size(c.kv.meta.dtype);
  const std::int64_t cos_sin_row_bytes = std::int64_t{kRopeDim} * dtype_size(c.cos_sin.meta.dtype);
  BytesMoved b;
  b.kv_read = live * kv_row_bytes;
  b.slots_read = c.num_inserted() * dtype_size(c.slots.meta.dtype);
  b.positions_read = live * dtype_size(c.positions.meta.dtype);
  b.cos_sin_read = live * cos_sin_row_bytes;
  b.records_written = live * layout_of(*format_of(c)).record_bytes();
  if (c.fp8_scale.present) b.scalars_read += tensor_bytes(c.fp8_scale.meta);
  if (c.op == InsertOp::kKvOnly) {
    if (c.kv_norm_weight.present) b.scalars_read += tensor_bytes(c.kv_norm_weight.meta);
    return b;
  }
  // Legacy: the Q side runs over every row (not only the inserted ones) unless q_out is the empty
  // tensor of Hp = 0. Packed: q_out is [N, Hp, 512], pad heads written as zeros without a read;
  // fp8_512: q_fp8 [N, H, 512] plus q_scale_inv; bf16_512: q_out is q itself (read, then written).
  if (c.q_out.numel() > 0) {
    b.q_read = tensor_bytes(c.q.meta);
    b.q_written = tensor_bytes(c.q_out);
  }
  if (c.q_scale_inv.present) b.scalars_read += tensor_bytes(c.q_scale_inv.meta);
  return b;
}

BytesMoved kv_norm_bytes_moved(std::int64_t rows) {
  const std::int64_t row_bytes = std::int64_t{kHeadDim} * dtype_size(DType::kBF16);
  BytesMoved b;
  b.kv_read = rows * row_bytes;
  b.scalars_read = row_bytes;  // the weight: one bf16 row
  b.norm_out_written = rows * row_bytes;
  return b;
}

}  // namespace kvc::bench
