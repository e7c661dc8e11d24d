// kv_insert.cpp: the KV side of both insert ops (see kv_insert.h).
#include "kvc/oracle/kv_insert.h"

#include <cmath>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/parallel_rows.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/rope.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/ue8m0.h"

namespace kvc::oracle {
namespace {

// The ties-away mutant: at an exact midpoint the two neighbours of v encode differently; pick
// the one farther from zero.
std::uint8_t e4m3_ties_away(float v) {
  const float toward = std::nextafter(v, 0.0f);
  const float away = std::nextafter(v, std::signbit(v) ? -INFINITY : INFINITY);
  if (!std::isnan(v) && v != 0.0f && e4m3_encode(toward) != e4m3_encode(away)) {
    const std::uint8_t exact = e4m3_encode(v);
    if (e4m3_decode(exact) != clamp_fp8_range(v)) return e4m3_encode(away);
  }
  return e4m3_encode(v);
}

std::uint8_t quantize(float scaled, const OracleOptions& o) {
  return o.mutation == OracleMutation::kTiesAwayFromZero ? e4m3_ties_away(scaled) : e4m3_encode(scaled);
}

void put16(std::vector<std::uint8_t>& b, std::int64_t off, std::uint16_t v) {
  b[static_cast<std::size_t>(off)] = static_cast<std::uint8_t>(v & 0xFF);
  b[static_cast<std::size_t>(off) + 1] = static_cast<std::uint8_t>(v >> 8);
}

}  // namespace

void kv_row_after_rope(const InsertCase& c, std::int64_t row, float* x, std::optional<float> kv_norm_inverse) {
  const DType dt = c.kv.meta.dtype;
  for (int d = 0; d < kHeadDim; ++d) x[d] = widen16(c.kv.load<std::uint16_t>(row * kHeadDim + d), dt);
  if (c.kv_norm_weight.present) {
    std::uint16_t w[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) w[d] = c.kv_norm_weight.load<std::uint16_t>(d);
    kv_norm_row_with_inverse(x, w, kv_norm_inverse ? *kv_norm_inverse : row_rms_inverse(x, c.kv_norm_eps));
  }
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
  float x[kHeadDim];
  kv_row_after_rope(c, row, x, kv_norm_inverse);
  const RecordLayout& l = view.layout();
  const DType dt = c.kv.meta.dtype;
  const std::int64_t data = token_data_offset(view, slot);

  if (l.paged_regions) {
    float y[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) y[d] = widen16(narrow16(x[d], dt), dt);  // round trip to storage dtype
    const std::int64_t scales = token_scale_offset(view, slot);
    for (int k = 0; k < l.scale_blocks; ++k) {
      const float* block = y + k * l.quant_block_dims;
      const BlockScale s = block_scale(block, l.quant_block_dims, o.exponent_rule);
      for (int i = 0; i < l.quant_block_dims; ++i) {
        const int d = k * l.quant_block_dims + i;
        backing[static_cast<std::size_t>(data + d)] = quantize(block[i] * s.inverse, o);
      }
      backing[static_cast<std::size_t>(scales + k)] = s.byte;
    }
    for (int d = l.fp8_dims; d < kHeadDim; ++d)
      put16(backing, data + dim_offset_in_data(view.format, d), narrow16(y[d], dt));
    if (l.scale_bytes > l.scale_blocks)
      backing[static_cast<std::size_t>(scales + l.scale_blocks)] =
          o.mutation == OracleMutation::kScalePadOne ? 0x01 : kScalePadByte;
    return;
  }
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
