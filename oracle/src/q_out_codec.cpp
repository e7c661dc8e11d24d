// q_out_codec.cpp: Q output addressing, both ways (see q_out_codec.h).
#include "kvc/oracle/q_out_codec.h"

namespace kvc::oracle {

std::int64_t q_out_offset(std::int64_t t, std::int64_t h, int d, std::int64_t heads, bool interleaved) {
  if (!interleaved) return (t * heads + h) * kHeadDim + d;
  const int lane = d / kDimsPerLane, i = d % kDimsPerLane;
  return t * heads * kHeadDim + static_cast<std::int64_t>(lane) * heads * kDimsPerLane + h * kDimsPerLane + i;
}

std::int64_t q_out_byte_offset(const QOutLayout& q, std::int64_t t, std::int64_t h, int d) {
  return q.offset_bytes + q_out_offset(t, h, d, q.heads, q.interleaved) * q.element_bytes;
}

std::optional<QOutElement> locate_q_out_byte(const QOutLayout& q, std::int64_t byte_offset) {
  const std::int64_t rel = byte_offset - q.offset_bytes;
  if (q.element_bytes <= 0 || q.heads <= 0 || rel < 0) return std::nullopt;
  const std::int64_t element = rel / q.element_bytes;
  if (element >= q.elements()) return std::nullopt;
  // The inverse of q_out_offset: a token's elements are contiguous in both layouts.
  const std::int64_t per_token = q.heads * kHeadDim, rem = element % per_token;
  QOutElement e;
  e.token = element / per_token;
  e.byte_in_element = static_cast<int>(rel % q.element_bytes);
  if (!q.interleaved) {
    e.head = rem / kHeadDim;
    e.dim = static_cast<int>(rem % kHeadDim);
  } else {
    const std::int64_t chunk = q.heads * kDimsPerLane;  // one lane's 16 dims of every head
    e.head = rem % chunk / kDimsPerLane;
    e.dim = static_cast<int>(rem / chunk * kDimsPerLane + rem % kDimsPerLane);
  }
  return e;
}

}  // namespace kvc::oracle
