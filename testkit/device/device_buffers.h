// device_buffers.h: the vocabulary of guarded device memory: guard zones, CUDA errors, and
// buffer-damage reports.
//
// Every tensor a device backend hands a kernel lives in its own allocation: a guard zone, the
// payload, another guard zone (guarded_buffer.h), inside a reserved address range whose
// neighbours are unmapped (device_allocation.h). The guard bytes hold a position-dependent
// pattern (guard_pattern.h), so a stray write of any constant (the canary, a zero, a record byte)
// or a shifted copy of the payload shows up. After a call every guard byte and every input
// payload byte is checked; what differs is reported with the buffer's name, the offset, the
// changed ranges and, where the buffer's owner can tell, what wrote them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "testkit/compare/byte_range.h"

namespace kvc::testkit {

// Guard zone size on each side unless a buffer asks for more (the cache asks for a page, so a
// write to page -1 or to page num_blocks lands in a guard); the allocation's rounding makes the
// zones longer (guarded_layout.h). A multiple of 256 keeps the payload at cudaMalloc's 256-byte
// alignment; misaligned bases are made with DLTensor.byte_offset.
inline constexpr std::int64_t kDeviceGuardBytes = 4096;
inline constexpr std::int64_t kDeviceAllocationAlignment = 256;

// The guard pattern: byte `index` of a guard zone (counted from the zone's first byte).
std::uint8_t guard_byte(std::int64_t index);

// KVC_DEVICE_GUARDS=off removes the guard zones: every tensor is then an allocation of its own
// size, so that compute-sanitizer's memcheck sees any access past it (a guard zone inside the
// allocation would hide an out-of-bounds read). The memcheck entries set it.
inline constexpr const char* kDeviceGuardsEnv = "KVC_DEVICE_GUARDS";
// The guard zone size for a request: at least kDeviceGuardBytes, a multiple of the alignment;
// 0 under KVC_DEVICE_GUARDS=off.
std::int64_t device_guard_bytes(std::int64_t requested);

// A CUDA runtime call failed: the message names the call, the error and what was being done.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "" when a CUDA device can be used, else why not ("no CUDA device: cudaGetDeviceCount: ...").
// GPU tests skip with this reason.
std::string cuda_device_unavailable();

// Throws DeviceError for a failed call: "<what>: <cudaGetErrorName>: <cudaGetErrorString>".
void check_cuda(int cuda_error, const std::string& what);

// The calling thread's current CUDA device (cudaGetDevice); throws DeviceError.
int current_device();

// The names of damage regions (BufferDamage::region) and of the cache backing's buffer, which
// reports and the probe (testkit/probe/probe_writes.h) tell apart.
inline constexpr const char* kGuardBeforeRegion = "guard before";
inline constexpr const char* kGuardAfterRegion = "guard after";
inline constexpr const char* kInputChangedRegion = "input changed";
inline constexpr const char* kWrittenByRejectedCallRegion = "written by a rejected call";
inline constexpr const char* kCacheBackingBuffer = "kv_cache (backing)";

// Damage found in one region of one buffer: how many bytes differ, and the first of them.
struct BufferDamage {
  std::string buffer;         // "kv", "kv_cache (backing)", "q_out", ...
  std::string region;         // "guard before", "guard after", "input changed", "written by a rejected call"
  std::int64_t offset = 0;    // first damaged byte, from the payload start (negative: before it)
  std::int64_t bytes = 0;     // damaged bytes in the region
  std::uint8_t expected = 0;  // at `offset`
  std::uint8_t actual = 0;
  // Guard zones: the changed bytes as payload offsets, in runs (at most kMaxChangedRanges; past
  // that the last run is stretched over the rest).
  static constexpr std::size_t kMaxChangedRanges = 4096;
  std::vector<ByteRange> changed;
  // What wrote them, when the buffer's owner can tell (the cache: the rows whose slot addresses
  // outside it, out_of_range_rows.h), one line each.
  std::vector<std::string> explanation;
  // "kv: guard after: 12 bytes differ, first at payload offset +262144 (expected 0x3b, got 0xa5)",
  // then each explanation line on a line of its own, indented.
  std::string to_string() const;
};

}  // namespace kvc::testkit
