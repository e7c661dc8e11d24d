// device_memory.h: plain device allocations for the benchmarks.
//
// The conformance suite wraps every buffer in guard zones and reads it back after each call; a
// benchmark wants the opposite: buffers uploaded once, then touched only by the op being timed.
// So these are bare cudaMalloc allocations (no managed memory: it would time page migration),
// described to the ABI by the suite's own DLTensors (testkit/device/device_tensor.h). Errors
// throw testkit::DeviceError with the call and the buffer named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvc::bench {

class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(std::string name, std::int64_t bytes);
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  void* data() const { return data_; }
  std::int64_t bytes() const { return bytes_; }
  bool empty() const { return data_ == nullptr; }

  // Synchronous upload of `bytes` host bytes to the start of the allocation.
  void upload(const void* host, std::int64_t bytes);
  // Fills the allocation with copies of `tile` (a random tile repeated: how a 32 GiB query is
  // made without generating 32 GiB on the host), by doubling device-to-device copies.
  void fill_repeating(const std::vector<std::uint8_t>& tile);
  void memset(int value);

 private:
  std::string name_;
  void* data_ = nullptr;
  std::int64_t bytes_ = 0;
};

// Fails with DeviceError unless `bytes` more fit in the device's free memory (with a margin for
// the runtime), naming what was being allocated: a clear message instead of an allocation error
// halfway through building a case.
void require_free_device_memory(std::int64_t bytes, const std::string& what);

}  // namespace kvc::bench
