// device_memory.cpp: bare device allocations (see device_memory.h).
#include "device_memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "testkit/device/device_buffers.h"

namespace kvc::bench {
namespace {

// Left free for the runtime, graphs and the library's own scratch when sizing a case.
constexpr std::int64_t kDeviceMemoryMargin = std::int64_t{1} << 30;

std::string gib(std::int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30));
  return s;
}

}  // namespace

using testkit::check_cuda;

DeviceAllocation::DeviceAllocation(std::string name, std::int64_t bytes) : name_(std::move(name)), bytes_(bytes) {
  if (bytes_ > 0)
    check_cuda(cudaMalloc(&data_, static_cast<std::size_t>(bytes_)), "cudaMalloc " + name_ + " (" + gib(bytes_) + ")");
}

DeviceAllocation::~DeviceAllocation() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceAllocation::upload(const void* host, std::int64_t bytes) {
  const std::int64_t n = std::min(bytes_, bytes);
  if (n > 0)
    check_cuda(cudaMemcpy(data_, host, static_cast<std::size_t>(n), cudaMemcpyHostToDevice), "upload " + name_);
}

void DeviceAllocation::fill_repeating(const std::vector<std::uint8_t>& tile) {
  std::int64_t filled = std::min<std::int64_t>(bytes_, static_cast<std::int64_t>(tile.size()));
  if (filled <= 0) return;
  check_cuda(cudaMemcpy(data_, tile.data(), static_cast<std::size_t>(filled), cudaMemcpyHostToDevice),
             "upload tile of " + name_);
  auto* base = static_cast<std::uint8_t*>(data_);
  while (filled < bytes_) {
    const std::int64_t chunk = std::min(filled, bytes_ - filled);
    check_cuda(cudaMemcpy(base + filled, base, static_cast<std::size_t>(chunk), cudaMemcpyDeviceToDevice),
               "replicate tile of " + name_);
    filled += chunk;
  }
}

void DeviceAllocation::memset(int value) {
  if (bytes_ > 0) check_cuda(cudaMemset(data_, value, static_cast<std::size_t>(bytes_)), "cudaMemset " + name_);
}

void require_free_device_memory(std::int64_t bytes, const std::string& what) {
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (bytes + kDeviceMemoryMargin > static_cast<std::int64_t>(free_bytes))
    throw testkit::DeviceError(what + " needs " + gib(bytes) + " of device memory; " +
                               gib(static_cast<std::int64_t>(free_bytes)) + " of " +
                               gib(static_cast<std::int64_t>(total_bytes)) + " are free");
}

}  // namespace kvc::bench
