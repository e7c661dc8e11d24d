// device_buffers.cpp: guarded device allocations (see device_buffers.h).
#include "testkit/device/device_buffers.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace kvc::testkit {
namespace {

std::vector<std::uint8_t> guard_pattern(std::int64_t bytes) {
  std::vector<std::uint8_t> g(static_cast<std::size_t>(bytes));
  for (std::int64_t i = 0; i < bytes; ++i) g[static_cast<std::size_t>(i)] = guard_byte(i);
  return g;
}

std::string hex_byte(std::uint8_t b) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", b);
  return s;
}

// Compares `actual` with `expected`; `offset_of_first` maps an index of `actual` to a payload
// offset. Appends one BufferDamage for the region when anything differs.
void compare_region(const std::string& buffer, const std::string& region, const std::vector<std::uint8_t>& expected,
                    const std::vector<std::uint8_t>& actual, std::int64_t offset_of_first,
                    std::vector<BufferDamage>* damage) {
  BufferDamage d;
  d.buffer = buffer;
  d.region = region;
  if (expected.size() != actual.size()) {
    d.bytes = static_cast<std::int64_t>(expected.size() > actual.size() ? expected.size() - actual.size()
                                                                        : actual.size() - expected.size());
    d.offset = offset_of_first + static_cast<std::int64_t>(std::min(expected.size(), actual.size()));
    damage->push_back(d);
    return;
  }
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) continue;
    if (d.bytes == 0) {
      d.offset = offset_of_first + static_cast<std::int64_t>(i);
      d.expected = expected[i];
      d.actual = actual[i];
    }
    ++d.bytes;
  }
  if (d.bytes > 0) damage->push_back(d);
}

}  // namespace

std::uint8_t guard_byte(std::int64_t index) {
  // A multiplicative hash of the index: no run of equal bytes, so neither a constant fill nor a
  // shifted copy of the guard itself can pass for it.
  return static_cast<std::uint8_t>((static_cast<std::uint64_t>(index) * 0x9E3779B97F4A7C15ull) >> 56);
}

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
  return buffer + ": " + region + ": " + std::to_string(bytes) + " byte(s) differ, first at payload offset " + where +
         " (expected " + hex_byte(expected) + ", got " + hex_byte(actual) + ")";
}

GuardedDeviceBuffer::GuardedDeviceBuffer(std::string name, const std::vector<std::uint8_t>& payload,
                                         std::int64_t guard_bytes)
    : name_(std::move(name)), payload_bytes_(static_cast<std::int64_t>(payload.size())) {
  guard_bytes_ = device_guard_bytes(guard_bytes);
  const std::int64_t total = payload_bytes_ + 2 * guard_bytes_;
  // Never a 0-byte allocation (an empty payload without guards still gets a valid pointer).
  check_cuda(cudaMalloc(&allocation_, static_cast<std::size_t>(std::max<std::int64_t>(total, 1))),
             "cudaMalloc of " + std::to_string(total) + " bytes for " + name_);
  const std::vector<std::uint8_t> guard = guard_pattern(guard_bytes_);
  auto* base = static_cast<std::uint8_t*>(allocation_);
  check_cuda(cudaMemcpy(base, guard.data(), guard.size(), cudaMemcpyHostToDevice),
             "upload of the guard before " + name_);
  if (!payload.empty())
    check_cuda(cudaMemcpy(base + guard_bytes_, payload.data(), payload.size(), cudaMemcpyHostToDevice),
               "upload of " + name_);
  check_cuda(cudaMemcpy(base + guard_bytes_ + payload_bytes_, guard.data(), guard.size(), cudaMemcpyHostToDevice),
             "upload of the guard after " + name_);
}

GuardedDeviceBuffer::~GuardedDeviceBuffer() {
  if (allocation_ != nullptr) cudaFree(allocation_);  // nothing to do about a failure here
}

GuardedDeviceBuffer::GuardedDeviceBuffer(GuardedDeviceBuffer&& other) noexcept
    : name_(std::move(other.name_)),
      allocation_(std::exchange(other.allocation_, nullptr)),
      guard_bytes_(other.guard_bytes_),
      payload_bytes_(other.payload_bytes_) {}

GuardedDeviceBuffer::Contents GuardedDeviceBuffer::download() const {
  std::vector<std::uint8_t> all(static_cast<std::size_t>(payload_bytes_ + 2 * guard_bytes_));
  check_cuda(cudaMemcpy(all.data(), allocation_, all.size(), cudaMemcpyDeviceToHost), "download of " + name_);
  Contents c;
  const auto g = static_cast<std::ptrdiff_t>(guard_bytes_);
  const auto p = static_cast<std::ptrdiff_t>(payload_bytes_);
  c.guard_before.assign(all.begin(), all.begin() + g);
  c.payload.assign(all.begin() + g, all.begin() + g + p);
  c.guard_after.assign(all.begin() + g + p, all.end());
  return c;
}

void GuardedDeviceBuffer::check_guards(const Contents& contents, std::vector<BufferDamage>* damage) const {
  const std::vector<std::uint8_t> guard = guard_pattern(guard_bytes_);
  compare_region(name_, "guard before", guard, contents.guard_before, -guard_bytes_, damage);
  compare_region(name_, "guard after", guard, contents.guard_after, payload_bytes_, damage);
}

void GuardedDeviceBuffer::check_payload(const Contents& contents, const std::vector<std::uint8_t>& expected,
                                        const std::string& region, std::vector<BufferDamage>* damage) const {
  compare_region(name_, region, expected, contents.payload, 0, damage);
}

}  // namespace kvc::testkit
