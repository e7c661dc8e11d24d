// legacy_insert.cpp: the Q+KV op (see legacy_insert.h).
#include "kvc/oracle/legacy_insert.h"

#include <cstring>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/storage16.h"

namespace kvc::oracle {
namespace {

void load_q_head(const InsertCase& c, std::int64_t t, std::int64_t h, float* e) {
  const std::int64_t heads = c.q.meta.size(1);
  for (int d = 0; d < kHeadDim; ++d) e[d] = widen16(c.q.load<std::uint16_t>((t * heads + h) * kHeadDim + d), c.q.meta.dtype);
}

template <typename T>
void put(std::vector<std::uint8_t>& out, const TensorMeta& meta, std::int64_t element, T v) {
  std::memcpy(out.data() + meta.offset_bytes + element * static_cast<std::int64_t>(sizeof(T)), &v, sizeof v);
}

void packed_q_side(const InsertCase& c, std::vector<std::uint8_t>& q_out) {
  const std::int64_t hp = c.padded_heads();
  const std::int64_t heads = c.q.meta.size(1);
  float e[kHeadDim];
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    for (std::int64_t h = 0; h < hp; ++h) {
      const bool live = h < heads;
      if (live) {
        load_q_head(c, t, h, e);
        if (c.apply_q_norm) q_norm_row(e, c.eps);
        if (c.apply_q_rope) rope_at_row_position(c, t, e);
      }
      for (int d = 0; d < kHeadDim; ++d) {
        const std::uint16_t bits = live ? narrow16(e[d], c.q.meta.dtype) : 0;
        put<std::uint16_t>(q_out, c.q_out, q_out_offset(t, h, d, hp, c.q_interleaved), bits);
      }
    }
  }
}

void full_cache_q_side(const InsertCase& c, RecordFormat f, std::vector<std::uint8_t>& q_out) {
  const std::int64_t heads = c.q.meta.size(1);
  const float q_scale_inv = f == RecordFormat::kFp8_512 ? c.q_scale_inv.load<float>(0) : 0.0f;
  float e[kHeadDim];
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    for (std::int64_t h = 0; h < heads; ++h) {
      load_q_head(c, t, h, e);
      if (c.apply_q_norm) q_norm_row(e, c.eps);
      rope_at_row_position(c, t, e);
      for (int d = 0; d < kHeadDim; ++d) {
        const std::int64_t idx = (t * heads + h) * kHeadDim + d;
        if (f == RecordFormat::kFp8_512) put<std::uint8_t>(q_out, c.q_out, idx, e4m3_encode(e[d] * q_scale_inv));
        else put<std::uint16_t>(q_out, c.q_out, idx, float_to_bf16(e[d]));
      }
    }
  }
}

}  // namespace

std::int64_t q_out_offset(std::int64_t t, std::int64_t h, int d, std::int64_t hp, bool interleaved) {
  if (!interleaved) return (t * hp + h) * kHeadDim + d;
  const int lane = d / kDimsPerLane, i = d % kDimsPerLane;
  return t * hp * kHeadDim + static_cast<std::int64_t>(lane) * hp * kDimsPerLane + h * kDimsPerLane + i;
}

Status legacy_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& o) {
  if (Status s = validate_legacy_insert(c, o.level); !s.ok()) return s;
  if (Status s = validate_outputs(c, out); !s.ok()) return s;
  const RecordFormat f = *format_of(c);
  if (is_packed(f)) packed_q_side(c, out.q_out);
  else full_cache_q_side(c, f, out.q_out);
  insert_kv_rows(c, out.cache, o);
  return Status::Ok();
}

}  // namespace kvc::oracle
