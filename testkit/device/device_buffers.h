// device_buffers.h: device allocations surrounded by guard zones, and buffer-damage reports.
//
// Every tensor a device backend hands a kernel lives in its own allocation: a guard zone, the
// payload, another guard zone. The guard bytes hold a position-dependent pattern, so a stray
// write of any constant (the canary, a zero, a record byte) or a shifted copy of the payload
// shows up. After a call the whole allocation is read back and every guard byte and every input
// payload byte is checked; what differs is reported with the buffer's name and the offset.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvc::testkit {

// Guard zone size on each side unless a buffer asks for more (the cache asks for a page, so a
// write to page -1 or to page num_blocks lands in a guard). A multiple of 256 keeps the payload
// at cudaMalloc's 256-byte alignment; misaligned bases are made with DLTensor.byte_offset.
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

// Damage found in one region of one buffer: how many bytes differ, and the first of them.
struct BufferDamage {
  std::string buffer;         // "kv", "cache backing", "q_out", ...
  std::string region;         // "guard before", "guard after", "input payload", "payload of a rejected call"
  std::int64_t offset = 0;    // first damaged byte, from the payload start (negative: before it)
  std::int64_t bytes = 0;     // damaged bytes in the region
  std::uint8_t expected = 0;  // at `offset`
  std::uint8_t actual = 0;
  // "kv: guard after: 12 bytes differ, first at payload offset +262144 (expected 0x3b, got 0xa5)"
  std::string to_string() const;
};

class GuardedDeviceBuffer {
 public:
  // Allocates guard + payload + guard (the guard rounded up to the alignment) and uploads both
  // guards and `payload`. Throws DeviceError.
  GuardedDeviceBuffer(std::string name, const std::vector<std::uint8_t>& payload,
                      std::int64_t guard_bytes = kDeviceGuardBytes);
  ~GuardedDeviceBuffer();
  GuardedDeviceBuffer(GuardedDeviceBuffer&& other) noexcept;
  GuardedDeviceBuffer& operator=(GuardedDeviceBuffer&&) = delete;
  GuardedDeviceBuffer(const GuardedDeviceBuffer&) = delete;
  GuardedDeviceBuffer& operator=(const GuardedDeviceBuffer&) = delete;

  const std::string& name() const { return name_; }
  void* payload() const { return static_cast<std::uint8_t*>(allocation_) + guard_bytes_; }
  std::int64_t payload_bytes() const { return payload_bytes_; }

  // The whole allocation read back (synchronously, after all prior work on the device).
  struct Contents {
    std::vector<std::uint8_t> payload;
    std::vector<std::uint8_t> guard_before, guard_after;
  };
  Contents download() const;

  // Appends damage of both guard zones of `contents` to `damage`.
  void check_guards(const Contents& contents, std::vector<BufferDamage>* damage) const;
  // Appends damage when the payload differs from `expected` (an input the call must not modify,
  // or any buffer after a rejected call). `region` names what the payload was supposed to be.
  void check_payload(const Contents& contents, const std::vector<std::uint8_t>& expected, const std::string& region,
                     std::vector<BufferDamage>* damage) const;

 private:
  std::string name_;
  void* allocation_ = nullptr;
  std::int64_t guard_bytes_ = 0;
  std::int64_t payload_bytes_ = 0;
};

}  // namespace kvc::testkit
