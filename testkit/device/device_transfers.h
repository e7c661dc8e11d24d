// device_transfers.h: the host<->device copies of guarded buffers, on one of two paths.
//
// A one-shot call (DeviceBackend, StackedCtxKvDevice) copies with plain cudaMemcpy, ordered on the
// legacy default stream and complete when the call returns, as it always has. A resident case
// (DeviceCaseBuffers: graph and stream tests) must not be ordered behind or ahead of work on the
// legacy default stream, which the stream tests hold on purpose: its copies go through a pinned
// staging buffer on a non-blocking stream of its own, in chunks, each waited for before the next.
// Neither path waits for the caller's streams: synchronise them before reading.
//
// Guard zones are written and scanned by kernels (guard_scan.h) on the same path: the legacy
// default stream for one-shot calls, the object's own stream for resident cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvc::testkit {

enum class TransferPath : std::uint8_t {
  kLegacyStream,  // cudaMemcpy from and to pageable host memory: synchronous, legacy default stream
  kStaged,        // pinned staging, cudaMemcpyAsync on an own non-blocking stream, synchronised
};

class DeviceTransfers {
 public:
  // kStaged pins a staging buffer of `largest_transfer` bytes (at least kDeviceGuardBytes, at most
  // 64 MiB) and creates its stream. Throws DeviceError.
  explicit DeviceTransfers(TransferPath path, std::int64_t largest_transfer = 0);
  ~DeviceTransfers();
  DeviceTransfers(const DeviceTransfers&) = delete;
  DeviceTransfers& operator=(const DeviceTransfers&) = delete;

  // Copies n host bytes to `device`. `what` names the bytes in errors ("upload of <what>").
  void upload(std::uint8_t* device, const std::uint8_t* host, std::int64_t n, const std::string& what);
  // Sets n device bytes to `value` ("fill of <what>"). The legacy-stream path uploads a host run
  // of the value, so that it completes like its other copies.
  void fill(std::uint8_t* device, std::uint8_t value, std::int64_t n, const std::string& what);
  // Copies n device bytes to `host` ("download of <what>").
  void download(const std::uint8_t* device, std::int64_t n, std::uint8_t* host, const std::string& what) const;

  // Writes the guard pattern over n device bytes (byte i of the zone: guard_pattern_byte(i)),
  // complete on return ("guard fill of <what>").
  void fill_guard(std::uint8_t* zone, std::int64_t n, const std::string& what);
  // The blocks of kGuardScanBlockBytes of [zone, zone + n) holding a byte other than the pattern,
  // ascending, found by a kernel: a clean zone is never read back ("guard scan of <what>").
  std::vector<std::int64_t> blocks_off_guard(const std::uint8_t* zone, std::int64_t n, const std::string& what) const;

  // Calls visit(offset, bytes, count) for consecutive chunks of [device, device + n): large
  // payloads are examined without holding them on the host.
  template <typename Visit>
  void for_each_chunk(const std::uint8_t* device, std::int64_t n, const std::string& what, Visit&& visit) const {
    std::uint8_t* chunk_buffer = chunk_buffer_for(n);
    for (std::int64_t done = 0; done < n; done += chunk_bytes_) {
      const std::int64_t chunk = n - done < chunk_bytes_ ? n - done : chunk_bytes_;
      copy_to_host(chunk_buffer, device + done, chunk, what);
      visit(done, static_cast<const std::uint8_t*>(chunk_buffer), chunk);
    }
  }

 private:
  // One copy of at most chunk_bytes_ bytes into the chunk buffer, complete on return.
  void copy_to_host(std::uint8_t* host, const std::uint8_t* device, std::int64_t n, const std::string& what) const;
  std::uint8_t* chunk_buffer_for(std::int64_t n) const;
  // The stream kernels of this path run on: the legacy default stream, or the staged stream.
  void* kernel_stream() const;

  TransferPath path_;
  std::int64_t chunk_bytes_ = 0;
  void* stream_ = nullptr;                      // cudaStream_t of the staged path
  std::uint8_t* pinned_ = nullptr;              // the staged path's staging buffer
  mutable std::vector<std::uint8_t> pageable_;  // the legacy-stream path's chunk buffer
  mutable std::uint8_t* scan_flags_ = nullptr;  // device flag bytes of the guard scan, grown on demand
  mutable std::int64_t scan_flags_capacity_ = 0;
};

}  // namespace kvc::testkit
