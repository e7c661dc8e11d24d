// guard_scan.h: guard zones written and checked on the device.
//
// A guard zone fills the rest of its allocation (guarded_layout.h): up to the VMM granularity,
// 2 MiB, per buffer. Reading every zone back after every call would cost milliseconds per call,
// so a kernel writes the pattern (guard_pattern.h), and after a call a kernel marks each block of
// kGuardScanBlockBytes that no longer holds it; only the marked blocks are read back and compared
// byte by byte on the host (GuardedDeviceBuffer::check_guards). A clean zone costs one launch and
// one flag byte per block copied back.
//
// Both enqueue on the caller's stream and return the launch's cudaError_t (as an int); the
// caller orders and waits (DeviceTransfers).
#pragma once

#include <cstdint>

namespace kvc::testkit {

inline constexpr std::int64_t kGuardScanBlockBytes = 4096;

// The number of scan blocks (flag bytes) of a zone of `bytes`.
inline std::int64_t guard_scan_blocks(std::int64_t bytes) {
  return bytes <= 0 ? 0 : (bytes + kGuardScanBlockBytes - 1) / kGuardScanBlockBytes;
}

// zone[i] = guard_pattern_byte(i) for i < bytes.
int enqueue_guard_fill(std::uint8_t* zone, std::int64_t bytes, void* stream);
// flags[b] = 1 when a byte of block b of the zone differs from the pattern, else 0, for
// b < guard_scan_blocks(bytes); `flags` is device memory.
int enqueue_guard_scan(const std::uint8_t* zone, std::int64_t bytes, std::uint8_t* flags, void* stream);

}  // namespace kvc::testkit
