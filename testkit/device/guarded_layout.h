// guarded_layout.h: where a guarded buffer's payload and guard zones sit inside its allocation.
//
// Pure arithmetic, no CUDA (it is in kvc::testkit, tested on the CPU). The allocation is rounded
// up to a granularity: 1 for cudaMalloc, the VMM allocation granularity (2 MiB on current GPUs)
// for a mapped range with unmapped neighbours (device_allocation.h). Every allocated byte that is
// not payload is guard, filled with the pattern and checked after every call, so a stray write
// anywhere in the allocation is seen; a write beyond it faults (VMM) or lands in another
// allocation (cudaMalloc).
#pragma once

#include <cstdint>

namespace kvc::testkit {

enum class PayloadPlacement : std::uint8_t {
  // A guard zone, the payload, a guard zone. The rounding slack goes to the zone before, so that
  // the zone after stays the requested length: a near miss past the end (page num_blocks) lands
  // in it, anything farther in the unmapped range and faults. Writes before the payload (page -1)
  // are caught by the guard up to its whole length.
  kBetweenGuards,
  // The payload at byte 0 of its allocation: no guard before it, the unmapped range right before
  // (a page -1 write faults); a guard zone after it.
  kAtMappingStart,
};

struct GuardedLayout {
  std::int64_t allocation_bytes = 0;  // guard_before + payload + guard_after (at least 1)
  std::int64_t guard_before = 0;      // the payload's offset in the allocation
  std::int64_t guard_after = 0;
};

// The layout of `payload` bytes with guard zones of `guard` bytes (0: none, KVC_DEVICE_GUARDS=off)
// where `placement` puts them, the allocation rounded up to `granularity`, the payload offset a
// multiple of `alignment` (`guard` must be one too).
GuardedLayout guarded_layout(std::int64_t payload, std::int64_t guard, PayloadPlacement placement,
                             std::int64_t granularity, std::int64_t alignment);

}  // namespace kvc::testkit
