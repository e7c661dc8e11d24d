// device_transfers.cpp: host<->device copies on the legacy stream or staged (see device_transfers.h).
#include "testkit/device/device_transfers.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "testkit/device/device_buffers.h"
#include "testkit/device/guard_scan.h"

namespace kvc::testkit {
namespace {

// Host staging: large enough that a multi-GiB scan is a few dozen copies, small enough to pin
// cheaply once per object. The legacy-stream path examines payloads in chunks of the same size.
constexpr std::int64_t kMaxChunkBytes = std::int64_t{64} << 20;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// A cudaMemcpy from pageable host memory to the device returns once the bytes are staged, not once
// they have landed (CUDA runtime API, "API synchronization behavior"); cudaMemset may return
// earlier still. The library is then called on its own non-blocking stream, which is not ordered
// after the legacy stream: without this wait its kernels can run before the canary fill lands,
// and the fill then overwrites what they wrote. One wait per transfer, before anything reads it.
void await_legacy_stream(const std::string& what) {
  check_cuda(cudaStreamSynchronize(cudaStreamLegacy), "waiting for the " + what + " to land");
}

}  // namespace

DeviceTransfers::DeviceTransfers(TransferPath path, std::int64_t largest_transfer) : path_(path) {
  if (path_ == TransferPath::kLegacyStream) {
    chunk_bytes_ = kMaxChunkBytes;
    return;
  }
  chunk_bytes_ = std::clamp<std::int64_t>(largest_transfer, kDeviceGuardBytes, kMaxChunkBytes);
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating the transfer stream");
  stream_ = s;
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, static_cast<std::size_t>(chunk_bytes_), cudaHostAllocDefault);
  if (e != cudaSuccess) cudaStreamDestroy(s);  // the destructor does not run for a throwing constructor
  check_cuda(e, "cudaHostAlloc of " + std::to_string(chunk_bytes_) + " staging bytes");
  pinned_ = static_cast<std::uint8_t*>(p);
}

DeviceTransfers::~DeviceTransfers() {
  if (scan_flags_ != nullptr) cudaFree(scan_flags_);  // nothing to do about a failure here
  if (pinned_ != nullptr) cudaFreeHost(pinned_);      // nothing to do about a failure here
  if (stream_ != nullptr) cudaStreamDestroy(as_stream(stream_));
}

void DeviceTransfers::upload(std::uint8_t* device, const std::uint8_t* host, std::int64_t n, const std::string& what) {
  if (n <= 0) return;
  if (path_ == TransferPath::kLegacyStream) {
    check_cuda(cudaMemcpy(device, host, static_cast<std::size_t>(n), cudaMemcpyHostToDevice), "upload of " + what);
    await_legacy_stream("upload of " + what);
    return;
  }
  for (std::int64_t done = 0; done < n; done += chunk_bytes_) {
    const std::int64_t chunk = std::min(chunk_bytes_, n - done);
    std::memcpy(pinned_, host + done, static_cast<std::size_t>(chunk));
    check_cuda(cudaMemcpyAsync(device + done, pinned_, static_cast<std::size_t>(chunk), cudaMemcpyHostToDevice,
                               as_stream(stream_)),
               "upload of " + what);
    check_cuda(cudaStreamSynchronize(as_stream(stream_)), "upload of " + what);
  }
}

void DeviceTransfers::fill(std::uint8_t* device, std::uint8_t value, std::int64_t n, const std::string& what) {
  if (n <= 0) return;
  if (path_ == TransferPath::kLegacyStream) {
    const std::vector<std::uint8_t> run(static_cast<std::size_t>(n), value);
    check_cuda(cudaMemcpy(device, run.data(), run.size(), cudaMemcpyHostToDevice), "fill of " + what);
    await_legacy_stream("fill of " + what);
    return;
  }
  check_cuda(cudaMemsetAsync(device, value, static_cast<std::size_t>(n), as_stream(stream_)), "fill of " + what);
  check_cuda(cudaStreamSynchronize(as_stream(stream_)), "fill of " + what);
}

void* DeviceTransfers::kernel_stream() const {
  return path_ == TransferPath::kLegacyStream ? static_cast<void*>(cudaStreamLegacy) : stream_;
}

void DeviceTransfers::fill_guard(std::uint8_t* zone, std::int64_t n, const std::string& what) {
  if (n <= 0) return;
  check_cuda(enqueue_guard_fill(zone, n, kernel_stream()), "guard fill of " + what);
  // The library runs on a stream of its own, not ordered after either path's: wait until the
  // pattern has landed, as every upload does.
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(kernel_stream())), "guard fill of " + what);
}

std::vector<std::int64_t> DeviceTransfers::blocks_off_guard(const std::uint8_t* zone, std::int64_t n,
                                                            const std::string& what) const {
  std::vector<std::int64_t> blocks;
  const std::int64_t count = guard_scan_blocks(n);
  if (count == 0) return blocks;
  if (count > scan_flags_capacity_) {
    // Grown rarely (the largest zone so far): a free synchronises the device.
    if (scan_flags_ != nullptr) cudaFree(scan_flags_);
    scan_flags_ = nullptr;
    scan_flags_capacity_ = 0;
    void* p = nullptr;
    const std::int64_t capacity = std::max<std::int64_t>(count, 1024);
    check_cuda(cudaMalloc(&p, static_cast<std::size_t>(capacity)), "cudaMalloc of the guard scan flags");
    scan_flags_ = static_cast<std::uint8_t*>(p);
    scan_flags_capacity_ = capacity;
  }
  check_cuda(enqueue_guard_scan(zone, n, scan_flags_, kernel_stream()), "guard scan of " + what);
  // The copies below run on the kernel's stream (the legacy default stream's cudaMemcpy, or the
  // staged stream): ordered after the scan.
  for_each_chunk(scan_flags_, count, "guard scan of " + what,
                 [&](std::int64_t base, const std::uint8_t* flags, std::int64_t k) {
                   for (std::int64_t i = 0; i < k; ++i)
                     if (flags[i] != 0) blocks.push_back(base + i);
                 });
  return blocks;
}

void DeviceTransfers::download(const std::uint8_t* device, std::int64_t n, std::uint8_t* host,
                               const std::string& what) const {
  if (n <= 0) return;
  if (path_ == TransferPath::kLegacyStream) {
    check_cuda(cudaMemcpy(host, device, static_cast<std::size_t>(n), cudaMemcpyDeviceToHost), "download of " + what);
    return;
  }
  for_each_chunk(device, n, what, [&](std::int64_t offset, const std::uint8_t* chunk, std::int64_t count) {
    std::memcpy(host + offset, chunk, static_cast<std::size_t>(count));
  });
}

void DeviceTransfers::copy_to_host(std::uint8_t* host, const std::uint8_t* device, std::int64_t n,
                                   const std::string& what) const {
  if (path_ == TransferPath::kLegacyStream) {
    check_cuda(cudaMemcpy(host, device, static_cast<std::size_t>(n), cudaMemcpyDeviceToHost), "download of " + what);
    return;
  }
  check_cuda(cudaMemcpyAsync(host, device, static_cast<std::size_t>(n), cudaMemcpyDeviceToHost, as_stream(stream_)),
             "download of " + what);
  check_cuda(cudaStreamSynchronize(as_stream(stream_)), "download of " + what);
}

std::uint8_t* DeviceTransfers::chunk_buffer_for(std::int64_t n) const {
  if (path_ == TransferPath::kStaged) return pinned_;
  const auto wanted = static_cast<std::size_t>(std::clamp<std::int64_t>(n, 0, chunk_bytes_));
  if (pageable_.size() < wanted) pageable_.resize(wanted);
  return pageable_.data();
}

}  // namespace kvc::testkit
