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

std::int64_t q_out_offset(std::int64_t t, std::int64_t h, int d, std::int64_t heads, bool interleaved) {
  if (!interleaved) return (t * heads + h) * kHeadDim + d;
  const int lane = d / kDimsPerLane, i = d % kDimsPerLane;
  return t * heads * kHeadDim + static_cast<std::int64_t>(lane) * heads * kDimsPerLane + h * kDimsPerLane + i;
}

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

int q_out_element_bytes(const InsertCase& c) { return dtype_size(c.q_out.dtype); }

std::int64_t q_out_byte_offset(const InsertCase& c, std::int64_t t, std::int64_t h, int d) {
  const bool packed = is_packed(*format_of(c));
  const std::int64_t heads = packed ? c.padded_heads() : c.q.meta.size(1);
  return c.q_out.offset_bytes + q_out_offset(t, h, d, heads, interleaved_q(c)) * q_out_element_bytes(c);
}

void store_q_head(const InsertCase& c, std::int64_t t, std::int64_t h, const float* e,
                  std::vector<std::uint8_t>& q_out) {
  const RecordFormat f = *format_of(c);
  const bool packed = is_packed(f);
  const std::int64_t heads = packed ? c.padded_heads() : c.q.meta.size(1);
  const bool interleaved = interleaved_q(c);
  const int size = q_out_element_bytes(c);
  const float q_scale_inv = f == RecordFormat::kFp8_512 ? c.q_scale_inv.load<float>(0) : 0.0f;
  for (int d = 0; d < kHeadDim; ++d) {
    const std::int64_t at =
        c.q_out.offset_bytes + q_out_offset(t, h, d, heads, interleaved) * size;  // q_out_byte_offset, hoisted
    if (packed)
      put<std::uint16_t>(q_out, at, narrow16(e[d], c.q.meta.dtype));
    else if (f == RecordFormat::kFp8_512)
      put<std::uint8_t>(q_out, at, e4m3_encode(e[d] * q_scale_inv));
    else
      put<std::uint16_t>(q_out, at, float_to_bf16(e[d]));
  }
}

Status legacy_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& o) {
  if (Status s = validate_legacy_insert(c, o.level); !s.ok()) return s;
  if (Status s = validate_outputs(c, out); !s.ok()) return s;
  const bool packed = is_packed(*format_of(c));
  const std::int64_t heads = c.q.meta.size(1);
  // Packed: Hp heads, H..Hp-1 zero-filled (Hp = 0 writes no Q); full caches: the H heads of q.
  const std::int64_t out_heads = packed ? c.padded_heads() : heads;
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
              for (int d = 0; d < kHeadDim; ++d)
                put<std::uint16_t>(out.q_out,
                                   c.q_out.offset_bytes + 2 * q_out_offset(t, h, d, out_heads, c.q_interleaved), 0);
            }
          }
        }
      },
      rows_per_thread);
  insert_kv_rows(c, out.cache, o);
  return Status::Ok();
}

}  // namespace kvc::oracle
