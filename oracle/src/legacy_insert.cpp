// legacy_insert.cpp: the Q+KV op (see legacy_insert.h).
#include "kvc/oracle/legacy_insert.h"

#include <algorithm>
#include <cstring>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/parallel_rows.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/storage16.h"

namespace kvc::oracle {
namespace {

// q_interleaved is a flag of the packed path only (the full-cache Q paths are head-major).
bool interleaved_q(const InsertCase& c) { return c.q_interleaved && is_packed(*format_of(c)); }

void load_q_head(const InsertCase& c, std::int64_t t, std::int64_t h, float* e) {
  const std::int64_t heads = c.q.meta.size(1);
  const bool interleaved = interleaved_q(c);
  for (int d = 0; d < kHeadDim; ++d)
    e[d] = widen16(c.q.load<std::uint16_t>(q_out_offset(t, h, d, heads, interleaved)), c.q.meta.dtype);
}

template <typename T>
void put(std::vector<std::uint8_t>& out, std::int64_t byte_offset, T v) {
  std::memcpy(out.data() + byte_offset, &v, sizeof v);
}

}  // namespace

float q_head_rms_inverse(const InsertCase& c, std::int64_t t, std::int64_t h) {
  float e[kHeadDim];
  load_q_head(c, t, h, e);
  return row_rms_inverse(e, c.eps);
}

void q_head_before_store(const InsertCase& c, std::int64_t t, std::int64_t h, float* e,
                         std::optional<float> q_norm_inverse) {
  load_q_head(c, t, h, e);
  if (c.apply_q_norm) q_norm_row_with_inverse(e, q_norm_inverse ? *q_norm_inverse : row_rms_inverse(e, c.eps));
  if (!is_packed(*format_of(c)) || c.apply_q_rope) rope_at_row_position(c, t, e);
}

std::int64_t q_out_byte_offset(const InsertCase& c, std::int64_t t, std::int64_t h, int d) {
  return q_out_byte_offset(q_out_layout(c, *format_of(c)), t, h, d);
}

void store_q_head(const InsertCase& c, std::int64_t t, std::int64_t h, const float* e,
                  std::vector<std::uint8_t>& q_out) {
  const QOutLayout layout = q_out_layout(c, *format_of(c));
  const float q_scale_inv = layout.kind == QOutKind::kFp8 ? c.q_scale_inv.load<float>(0) : 0.0f;
  for (int d = 0; d < kHeadDim; ++d) {
    const std::int64_t at = q_out_byte_offset(layout, t, h, d);
    if (layout.kind == QOutKind::kPadded)
      put<std::uint16_t>(q_out, at, narrow16(e[d], c.q.meta.dtype));
    else if (layout.kind == QOutKind::kFp8)
      put<std::uint8_t>(q_out, at, e4m3_encode(e[d] * q_scale_inv));
    else
      put<std::uint16_t>(q_out, at, float_to_bf16(e[d]));
  }
}

Status legacy_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& o) {
  if (Status s = validate_legacy_insert(c, o.level); !s.ok()) return s;
  if (Status s = validate_outputs(c, out); !s.ok()) return s;
  const QOutLayout layout = q_out_layout(c, *format_of(c));
  const std::int64_t heads = c.q.meta.size(1);
  // Packed: Hp heads, H..Hp-1 zero-filled (Hp = 0 writes no Q); full caches: the H heads of q.
  const std::int64_t out_heads = layout.heads;
  // Each row writes its own [out_heads, 512] block of the contiguous q_out: rows run in parallel
  // (parallel_rows.h), a chunk being worth a thread at about kMinRowsPerThread head rows.
  const std::int64_t rows_per_thread =
      std::max<std::int64_t>(1, kMinRowsPerThread / std::max<std::int64_t>(1, out_heads));
  parallel_rows(
      c.num_rows(), resolve_oracle_threads(o.threads),
      [&](std::int64_t begin, std::int64_t end) {
        float e[kHeadDim];
        for (std::int64_t t = begin; t < end; ++t) {
          for (std::int64_t h = 0; h < out_heads; ++h) {
            if (h < heads) {
              q_head_before_store(c, t, h, e);
              store_q_head(c, t, h, e, out.q_out);
            } else {  // padding head (packed only, q's 16-bit dtype)
              for (int d = 0; d < kHeadDim; ++d) put<std::uint16_t>(out.q_out, q_out_byte_offset(layout, t, h, d), 0);
            }
          }
        }
      },
      rows_per_thread);
  insert_kv_rows(c, out.cache, o);
  return Status::Ok();
}

}  // namespace kvc::oracle
