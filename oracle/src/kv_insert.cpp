// kv_insert.cpp: the KV side of both insert ops (see kv_insert.h).
#include "kvc/oracle/kv_insert.h"

#include <cmath>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/parallel_rows.h"
#include "kvc/oracle/quantize.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/rope.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/store_rotated.h"

namespace kvc::oracle {
namespace {

void put16(std::vector<std::uint8_t>& b, std::int64_t off, std::uint16_t v) {
  b[static_cast<std::size_t>(off)] = static_cast<std::uint8_t>(v & 0xFF);
  b[static_cast<std::size_t>(off) + 1] = static_cast<std::uint8_t>(v >> 8);
}

}  // namespace

void kv_row_before_rope(const InsertCase& c, std::int64_t row, float* x, std::optional<float> kv_norm_inverse) {
  const DType dt = c.kv.meta.dtype;
  for (int d = 0; d < kHeadDim; ++d) x[d] = widen16(c.kv.load<std::uint16_t>(row * kHeadDim + d), dt);
  if (c.kv_norm_weight.present) {
    std::uint16_t w[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) w[d] = c.kv_norm_weight.load<std::uint16_t>(d);
    kv_norm_row_with_inverse(x, w, kv_norm_inverse ? *kv_norm_inverse : row_rms_inverse(x, c.kv_norm_eps));
  }
}

void kv_row_after_rope(const InsertCase& c, std::int64_t row, float* x, std::optional<float> kv_norm_inverse) {
  kv_row_before_rope(c, row, x, kv_norm_inverse);
  rope_at_row_position(c, row, x);
}

float kv_norm_rms_inverse(const InsertCase& c, std::int64_t row) {
  float x[kHeadDim];
  for (int d = 0; d < kHeadDim; ++d) x[d] = widen16(c.kv.load<std::uint16_t>(row * kHeadDim + d), c.kv.meta.dtype);
  return row_rms_inverse(x, c.kv_norm_eps);
}

void rope_at_row_position(const InsertCase& c, std::int64_t row, float* row512) {
  const std::int64_t pos = c.positions.load<std::int64_t>(row);
  float csc[kRopeDim];
  for (int j = 0; j < kRopeDim; ++j) csc[j] = c.cos_sin.load<float>(pos * kRopeDim + j);
  rope_gptj_row(row512, csc);
}

void insert_kv_row(const InsertCase& c, const PagedCacheView& view, std::int64_t row,
                   std::vector<std::uint8_t>& backing, const OracleOptions& o, std::optional<float> kv_norm_inverse) {
  const std::int64_t slot = c.slots.load<std::int64_t>(row);
  if (slot < 0) return;
  const RecordLayout& l = view.layout();
  const DType dt = c.kv.meta.dtype;

  if (l.paged_regions) {
    // RoPE, the round trip to the storage dtype, then the store op's encoder (store_rotated.h).
    std::uint16_t row16[kHeadDim];
    if (o.profile.rope == RopePolicy::kNone && !c.kv_norm_weight.present) {
      rotated_row16(c, row, o.profile, row16);
    } else {
      float x[kHeadDim];
      kv_row_before_rope(c, row, x, kv_norm_inverse);
      if (o.profile.rope == RopePolicy::kRotate) rope_at_row_position(c, row, x);
      for (int d = 0; d < kHeadDim; ++d) row16[d] = narrow16(x[d], dt);
    }
    store_rotated_row(row16, dt, view, slot, backing, o);
    return;
  }
  float x[kHeadDim];
  kv_row_before_rope(c, row, x, kv_norm_inverse);
  if (o.profile.rope == RopePolicy::kRotate) rope_at_row_position(c, row, x);
  const std::int64_t data = token_data_offset(view, slot);
  if (view.format == RecordFormat::kFp8_512) {
    const float inv = 1.0f / c.fp8_scale.load<float>(0);  // reciprocal once, then multiplies
    for (int d = 0; d < kHeadDim; ++d) backing[static_cast<std::size_t>(data + d)] = quantize(x[d] * inv, o);
    return;
  }
  // bf16_512 (docs/contract.md §3.6, version 2): every dim is stored as bf() of its fp32 value.
  // NoPE dims therefore reproduce the input bits, except NaN, which becomes 0x7FFF whatever its
  // sign and payload (version 1 kept the payload; the upstream kernel does not).
  for (int d = 0; d < kHeadDim; ++d) put16(backing, data + 2 * d, float_to_bf16(x[d]));
}

void insert_kv_rows(const InsertCase& c, std::vector<std::uint8_t>& backing, const OracleOptions& o) {
  const PagedCacheView view = PagedCacheView::of(c.cache, *format_of(c), c.kv.meta.dtype);
  // Parallel only when no two rows can write the same byte; else row order, last writer wins.
  const bool parallel = c.num_inserted() >= 2 * kMinRowsPerThread && kv_rows_write_disjoint_bytes(c);
  parallel_rows(c.num_inserted(), parallel ? resolve_oracle_threads(o.threads) : 1,
                [&](std::int64_t begin, std::int64_t end) {
                  for (std::int64_t t = begin; t < end; ++t) insert_kv_row(c, view, t, backing, o);
                });
}

Status kv_only_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& o) {
  if (Status s = validate_kv_only_insert(c, o.level); !s.ok()) return s;
  if (Status s = validate_outputs(c, out); !s.ok()) return s;
  insert_kv_rows(c, out.cache, o);
  return Status::Ok();
}

}  // namespace kvc::oracle
