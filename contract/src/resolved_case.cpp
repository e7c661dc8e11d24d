// resolved_case.cpp: resolving an insert case (see resolved_case.h).
#include "kvc/resolved_case.h"

#include <stdexcept>
#include <string>

namespace kvc {
namespace {

// Slot t of an i64 slot tensor, when its bytes hold it.
std::optional<std::int64_t> readable_slot(const HostTensor& slots, std::int64_t t) {
  if (!slots.present || slots.meta.dtype != DType::kI64 || slots.meta.offset_bytes < 0) return std::nullopt;
  const std::int64_t end = slots.meta.offset_bytes + (t + 1) * std::int64_t{sizeof(std::int64_t)};
  if (end > static_cast<std::int64_t>(slots.bytes.size())) return std::nullopt;
  return slots.load<std::int64_t>(t);
}

std::int64_t count_live_rows(const InsertCase& c) {
  std::int64_t live = 0;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::optional<std::int64_t> s = readable_slot(c.slots, t);
    if (s && *s >= 0) ++live;
  }
  return live;
}

}  // namespace

QOutLayout q_out_layout(const InsertCase& c, RecordFormat format) {
  QOutLayout q;
  if (c.op != InsertOp::kLegacy) return q;
  q.tokens = c.num_rows();
  q.q_heads = c.q.meta.rank() >= 2 ? c.q.meta.size(1) : 0;
  q.element_bytes = dtype_size(c.q_out.dtype);
  q.offset_bytes = c.q_out.offset_bytes;
  if (is_packed(format)) {
    q.kind = QOutKind::kPadded;
    q.heads = c.padded_heads();
    q.interleaved = c.q_interleaved;  // a flag of the packed path only
  } else {
    q.kind = format == RecordFormat::kFp8_512 ? QOutKind::kFp8 : QOutKind::kInPlace;
    q.heads = q.q_heads;
  }
  return q;
}

std::optional<ResolvedInsertCase> resolve(const InsertCase& c) {
  const std::optional<RecordFormat> format = format_of(c);
  if (!format) return std::nullopt;
  return ResolvedInsertCase{*format,          layout_of(*format), dtype_size(c.kv.meta.dtype), c.num_rows(),
                            c.num_inserted(), count_live_rows(c), q_out_layout(c, *format)};
}

ResolvedInsertCase resolve_or_throw(const InsertCase& c) {
  std::optional<ResolvedInsertCase> r = resolve(c);
  if (!r)
    throw std::invalid_argument("insert case: cache dtype code " + std::to_string(static_cast<int>(c.cache.dtype)) +
                                " (kv_mxfp8 " + (c.kv_mxfp8 ? "true" : "false") + ") selects no record format");
  return *r;
}

}  // namespace kvc
