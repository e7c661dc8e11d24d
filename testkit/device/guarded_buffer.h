// guarded_buffer.h: one device allocation between two guard zones, and what its payload should hold.
//
// Every tensor a device call hands a kernel lives in its own allocation: a guard zone, the
// payload, another guard zone (device_buffers.h: sizes, pattern, KVC_DEVICE_GUARDS=off;
// guarded_layout.h: where the payload sits), mapped inside a reserved address range whose
// neighbours are unmapped (device_allocation.h): a near miss lands in a guard zone and is
// reported, a write beyond the zones faults instead of corrupting another allocation. The buffer
// remembers what its payload was set to (a fill byte overlaid with the writes made since), so
// that after a call an input can be checked unchanged, and after a rejected call every buffer;
// the guard zones are checked always, by a kernel first (guard_scan.h) and byte by byte where it
// finds a change. Checks read the device in chunks (DeviceTransfers), so a multi-GiB payload is
// examined without holding it on the host.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "testkit/compare/byte_range.h"
#include "testkit/device/device_allocation.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/device_transfers.h"
#include "testkit/device/guarded_layout.h"

namespace kvc::testkit {

// Bytes of a payload that differ from a fill value: how many, and the first few.
struct ScanResult {
  struct Difference {
    std::int64_t offset = 0;
    std::uint8_t actual = 0;
  };
  std::int64_t scanned_bytes = 0;
  std::int64_t differing_bytes = 0;
  std::vector<Difference> first;  // ascending offsets, at most the number asked for
};

class GuardedDeviceBuffer {
 public:
  // Allocates the payload with guard zones of at least device_guard_bytes(guard_bytes) where
  // `placement` puts them, in a reserved range with unmapped neighbours of at least
  // max(kMinUnmappedNeighbourBytes, payload) on each side (cudaMalloc with the guards alone where
  // the device has no VMM, and with no guards under KVC_DEVICE_GUARDS=off), and writes the guard
  // zones through `io`, which must outlive the buffer. The payload is undefined until fill() or a
  // write. Throws DeviceError.
  GuardedDeviceBuffer(std::string name, std::int64_t payload_bytes, std::int64_t guard_bytes, DeviceTransfers* io,
                      PayloadPlacement placement = PayloadPlacement::kBetweenGuards);
  ~GuardedDeviceBuffer();
  GuardedDeviceBuffer(GuardedDeviceBuffer&& other) noexcept;
  GuardedDeviceBuffer& operator=(GuardedDeviceBuffer&&) = delete;
  GuardedDeviceBuffer(const GuardedDeviceBuffer&) = delete;
  GuardedDeviceBuffer& operator=(const GuardedDeviceBuffer&) = delete;

  const std::string& name() const { return name_; }
  std::uint8_t* payload() const { return allocation_.base() + layout_.guard_before; }
  std::int64_t payload_bytes() const { return payload_bytes_; }

  // Where it lies: the allocation's kind, the guard zones' lengths, and the unmapped addresses
  // right before the first guard byte (the payload, without a guard before it) and right after
  // the last.
  AllocationKind allocation_kind() const { return allocation_.kind(); }
  std::int64_t guard_before_bytes() const { return layout_.guard_before; }
  std::int64_t guard_after_bytes() const { return layout_.guard_after; }
  std::int64_t unmapped_before_bytes() const { return allocation_.unmapped_before(); }
  std::int64_t unmapped_after_bytes() const { return allocation_.unmapped_after(); }

  // Sets every payload byte to `value`; the expected payload becomes that fill.
  void fill(std::uint8_t value);
  // Writes n bytes at `offset` (std::out_of_range outside the payload); a copy of them joins the
  // expected payload.
  void write(std::int64_t offset, const std::uint8_t* bytes, std::int64_t n);
  // Writes the whole payload (std::invalid_argument unless bytes.size() == payload_bytes()); the
  // bytes, moved here, become the expected payload.
  void write_all(std::vector<std::uint8_t> bytes);
  // The same without a copy: `bytes` must outlive every check (a case's tensors, a caller's
  // outputs, possibly hundreds of MiB).
  void write_all_borrowed(const std::vector<std::uint8_t>& bytes);

  // Bytes [offset, offset + n) of the payload (std::out_of_range outside it).
  void read(std::int64_t offset, std::int64_t n, std::uint8_t* out) const;
  std::vector<std::uint8_t> read_all() const;
  // Every payload byte outside `excluded` (sorted or not) that differs from `fill`, the first
  // `max_reported` of them listed.
  ScanResult scan(std::uint8_t fill, std::vector<ByteRange> excluded, std::size_t max_reported) const;

  // Appends damage of both guard zones ("guard before", "guard after"), with the changed ranges.
  void check_guards(std::vector<BufferDamage>* damage) const;
  // Appends damage when the payload differs from the expected payload; `region` says what the
  // payload was supposed to be ("input changed", "written by a rejected call").
  void check_payload(const std::string& region, std::vector<BufferDamage>* damage) const;

 private:
  // Expected bytes written at `offset`: kept here, or the caller's (write_all_borrowed).
  struct Patch {
    std::int64_t offset = 0;
    std::vector<std::uint8_t> owned;
    const std::vector<std::uint8_t>* borrowed = nullptr;
    const std::vector<std::uint8_t>& bytes() const { return borrowed != nullptr ? *borrowed : owned; }
  };
  // The expected payload bytes [base, base + n): the fill, then every write in order.
  void expected_bytes(std::int64_t base, std::int64_t n, std::vector<std::uint8_t>* out) const;
  void upload_all(const std::vector<std::uint8_t>& bytes);
  // One guard zone: [zone, zone + n), whose byte 0 is payload offset `first_offset`.
  void check_guard_zone(const char* region, const std::uint8_t* zone, std::int64_t n, std::int64_t first_offset,
                        std::vector<BufferDamage>* damage) const;

  std::string name_;
  DeviceTransfers* io_;
  std::int64_t payload_bytes_ = 0;
  GuardedLayout layout_;
  DeviceAllocation allocation_;
  std::uint8_t fill_ = 0;
  std::vector<Patch> patches_;
};

}  // namespace kvc::testkit
