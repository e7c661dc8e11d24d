// offset_views.cpp: see offset_views.h.
#include "testkit/cases/offset_views.h"

#include <cstring>
#include <stdexcept>

#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"

namespace kvc::testkit {
namespace {

void move_with_canary(HostTensor& t, std::int64_t offset) {
  const std::uint8_t canary = kCanary;
  move_to_offset(t, offset, &canary, 1);
}

template <typename T>
void move_with_value(HostTensor& t, std::int64_t offset, T decoy) {
  std::uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &decoy, sizeof(T));
  move_to_offset(t, offset, bytes, static_cast<int>(sizeof(T)));
}

}  // namespace

void move_to_offset(HostTensor& t, std::int64_t offset, const std::uint8_t* decoy, int decoy_bytes) {
  if (!t.present) return;
  if (t.meta.offset_bytes != 0) throw std::invalid_argument("move_to_offset: the tensor is already a view");
  std::vector<std::uint8_t> prefix(static_cast<std::size_t>(offset));
  for (std::size_t i = 0; i < prefix.size(); ++i) prefix[i] = decoy[i % static_cast<std::size_t>(decoy_bytes)];
  t.bytes.insert(t.bytes.begin(), prefix.begin(), prefix.end());
  t.meta.offset_bytes = offset;
}

void place_in_offset_views(InsertCase& c, std::int64_t free_slot) {
  const OffsetViewBytes& o = kOffsetViewBytes;
  move_with_canary(c.kv, o.kv);
  move_with_canary(c.cos_sin, o.cos_sin);
  move_with_value<std::int64_t>(c.slots, o.slots, free_slot);
  move_with_value<std::int64_t>(c.positions, o.positions, 0);
  move_with_canary(c.fp8_scale, o.fp8_scale);
  c.cache.offset_bytes = o.cache;
  if (c.op != InsertOp::kLegacy) return;
  move_with_canary(c.q, o.q);
  move_with_canary(c.q_scale_inv, o.q_scale_inv);
  // bf16_512 rotates q in place: q_out is q's memory, so it sits at q's offset.
  c.q_out.offset_bytes = resolve_or_throw(c).format == RecordFormat::kBf16_512 ? o.q : o.q_out;
}

HostTensor place_kv_norm_weight(HostTensor weight) {
  move_with_canary(weight, kOffsetViewBytes.kv_norm_weight);
  return weight;
}

}  // namespace kvc::testkit
