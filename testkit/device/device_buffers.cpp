// device_buffers.cpp: guard zones, CUDA errors and damage reports (see device_buffers.h).
#include "testkit/device/device_buffers.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "testkit/device/guard_pattern.h"

namespace kvc::testkit {
namespace {

std::string hex_byte(std::uint8_t b) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", b);
  return s;
}

}  // namespace

std::uint8_t guard_byte(std::int64_t index) { return guard_pattern_byte(index); }

std::int64_t device_guard_bytes(std::int64_t requested) {
  static const bool off = [] {
    const char* v = std::getenv(kDeviceGuardsEnv);
    return v != nullptr && std::string(v) == "off";
  }();
  if (off) return 0;
  return (std::max(requested, kDeviceGuardBytes) + kDeviceAllocationAlignment - 1) / kDeviceAllocationAlignment *
         kDeviceAllocationAlignment;
}

void check_cuda(int cuda_error, const std::string& what) {
  if (cuda_error == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(cuda_error);
  throw DeviceError(what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

std::string cuda_device_unavailable() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
      return std::string("no usable CUDA device: cudaGetDeviceCount returned ") + cudaGetErrorName(e) + " (" +
             cudaGetErrorString(e) + ")";
    if (count == 0) return std::string("no CUDA device: cudaGetDeviceCount returned 0 devices");
    return std::string();
  }();
  return reason;
}

std::string BufferDamage::to_string() const {
  const std::string where = offset >= 0 ? "+" + std::to_string(offset) : std::to_string(offset);
  std::string s = buffer + ": " + region + ": " + std::to_string(bytes) + " byte(s) differ, first at payload offset " +
                  where + " (expected " + hex_byte(expected) + ", got " + hex_byte(actual) + ")";
  for (const std::string& line : explanation) s += "\n    " + line;
  return s;
}

}  // namespace kvc::testkit
