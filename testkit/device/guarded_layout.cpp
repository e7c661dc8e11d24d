// guarded_layout.cpp: payload and guard zones inside an allocation (see guarded_layout.h).
#include "testkit/device/guarded_layout.h"

#include <algorithm>

namespace kvc::testkit {
namespace {

std::int64_t round_up(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }
std::int64_t round_down(std::int64_t n, std::int64_t to) { return n / to * to; }

}  // namespace

GuardedLayout guarded_layout(std::int64_t payload, std::int64_t guard, PayloadPlacement placement,
                             std::int64_t granularity, std::int64_t alignment) {
  GuardedLayout l;
  const std::int64_t g = std::max<std::int64_t>(granularity, 1);
  if (guard <= 0) {
    l.allocation_bytes = round_up(std::max<std::int64_t>(payload, 1), g);  // never a 0-byte allocation
    return l;
  }
  if (placement == PayloadPlacement::kAtMappingStart) {
    l.allocation_bytes = round_up(payload + guard, g);
    l.guard_after = l.allocation_bytes - payload;
    return l;
  }
  l.allocation_bytes = round_up(payload + 2 * guard, g);
  l.guard_before = round_down(l.allocation_bytes - guard - payload, std::max<std::int64_t>(alignment, 1));
  l.guard_after = l.allocation_bytes - l.guard_before - payload;
  return l;
}

}  // namespace kvc::testkit
