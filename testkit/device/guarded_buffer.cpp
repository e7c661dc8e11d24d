// guarded_buffer.cpp: guarded device allocations and their checks (see guarded_buffer.h).
#include "testkit/device/guarded_buffer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "testkit/device/guard_pattern.h"
#include "testkit/device/guard_scan.h"

namespace kvc::testkit {
namespace {

// Bytes compared with memcmp before a byte-by-byte look: checks and scans run at memory speed
// when clean.
constexpr std::int64_t kCompareBlockBytes = 4096;

std::string range_text(const char* verb, const std::string& name, std::int64_t n, std::int64_t offset,
                       std::int64_t payload_bytes) {
  return name + ": " + verb + " of " + std::to_string(n) + " bytes at " + std::to_string(offset) + " outside its " +
         std::to_string(payload_bytes) + " bytes";
}

// Reads [device, device + n) in chunks and compares each with what `expected(base, count, out)`
// says it should hold; appends one BufferDamage for the region when anything differs: how many
// bytes, and the first of them as a payload offset (`first_offset` is that of device[0]).
template <typename Expected>
void compare_region(const DeviceTransfers& io, const std::string& buffer, const std::string& region,
                    const std::uint8_t* device, std::int64_t n, std::int64_t first_offset, Expected&& expected,
                    std::vector<BufferDamage>* damage) {
  BufferDamage d;
  d.buffer = buffer;
  d.region = region;
  std::vector<std::uint8_t> want;
  io.for_each_chunk(device, n, buffer, [&](std::int64_t base, const std::uint8_t* chunk, std::int64_t count) {
    expected(base, count, &want);
    if (std::memcmp(chunk, want.data(), static_cast<std::size_t>(count)) == 0) return;
    for (std::int64_t i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (chunk[k] == want[k]) continue;
      if (d.bytes++ == 0) d.offset = first_offset + base + i, d.expected = want[k], d.actual = chunk[k];
    }
  });
  if (d.bytes > 0) damage->push_back(d);
}

// The layout of a buffer: the guard zones device_guard_bytes() gives (none when off), rounded to
// the reserved-range granularity where the device has one.
GuardedLayout plan(std::int64_t payload_bytes, std::int64_t guard_bytes, PayloadPlacement placement) {
  const std::int64_t guard = device_guard_bytes(guard_bytes);
  const std::int64_t granularity = guard > 0 ? reserved_range_granularity() : 0;
  return guarded_layout(payload_bytes, guard, placement, granularity > 0 ? granularity : 1, kDeviceAllocationAlignment);
}

}  // namespace

GuardedDeviceBuffer::GuardedDeviceBuffer(std::string name, std::int64_t payload_bytes, std::int64_t guard_bytes,
                                         DeviceTransfers* io, PayloadPlacement placement)
    : name_(std::move(name)),
      io_(io),
      payload_bytes_(payload_bytes),
      layout_(plan(payload_bytes, guard_bytes, placement)),
      // Without guards (KVC_DEVICE_GUARDS=off, for memcheck) an allocation of the payload's own
      // size, so that the sanitizer sees any access past it.
      allocation_(layout_.allocation_bytes, std::max(kMinUnmappedNeighbourBytes, payload_bytes),
                  device_guard_bytes(guard_bytes) > 0 ? AllocationKind::kReservedRange : AllocationKind::kCudaMalloc,
                  name_) {
  // A throw from here frees the allocation: it is a member already constructed.
  io_->fill_guard(allocation_.base(), layout_.guard_before, "the guard before " + name_);
  io_->fill_guard(payload() + payload_bytes_, layout_.guard_after, "the guard after " + name_);
}

GuardedDeviceBuffer::~GuardedDeviceBuffer() = default;

GuardedDeviceBuffer::GuardedDeviceBuffer(GuardedDeviceBuffer&& other) noexcept
    : name_(std::move(other.name_)),
      io_(other.io_),
      payload_bytes_(other.payload_bytes_),
      layout_(other.layout_),
      allocation_(std::move(other.allocation_)),
      fill_(other.fill_),
      patches_(std::move(other.patches_)) {}

void GuardedDeviceBuffer::fill(std::uint8_t value) {
  io_->fill(payload(), value, payload_bytes_, name_);
  fill_ = value;
  patches_.clear();
}

void GuardedDeviceBuffer::write(std::int64_t offset, const std::uint8_t* bytes, std::int64_t n) {
  if (offset < 0 || n < 0 || offset + n > payload_bytes_)
    throw std::out_of_range(range_text("write", name_, n, offset, payload_bytes_));
  if (n == 0) return;
  io_->upload(payload() + offset, bytes, n, name_);
  if (offset == 0 && n == payload_bytes_) patches_.clear();
  Patch& p = patches_.emplace_back();
  p.offset = offset;
  p.owned.assign(bytes, bytes + n);
}

void GuardedDeviceBuffer::upload_all(const std::vector<std::uint8_t>& bytes) {
  if (static_cast<std::int64_t>(bytes.size()) != payload_bytes_)
    throw std::invalid_argument(name_ + ": " + std::to_string(bytes.size()) + " bytes written over a payload of " +
                                std::to_string(payload_bytes_));
  io_->upload(payload(), bytes.data(), payload_bytes_, name_);
  patches_.clear();
}

void GuardedDeviceBuffer::write_all(std::vector<std::uint8_t> bytes) {
  upload_all(bytes);
  patches_.emplace_back().owned = std::move(bytes);
}

void GuardedDeviceBuffer::write_all_borrowed(const std::vector<std::uint8_t>& bytes) {
  upload_all(bytes);
  patches_.emplace_back().borrowed = &bytes;
}

void GuardedDeviceBuffer::read(std::int64_t offset, std::int64_t n, std::uint8_t* out) const {
  if (offset < 0 || n < 0 || offset + n > payload_bytes_)
    throw std::out_of_range(range_text("read", name_, n, offset, payload_bytes_));
  io_->download(payload() + offset, n, out, name_);
}

std::vector<std::uint8_t> GuardedDeviceBuffer::read_all() const {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(payload_bytes_));
  read(0, payload_bytes_, bytes.data());
  return bytes;
}

ScanResult GuardedDeviceBuffer::scan(std::uint8_t fill, std::vector<ByteRange> excluded,
                                     std::size_t max_reported) const {
  std::sort(excluded.begin(), excluded.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  ScanResult r;
  const std::vector<std::uint8_t> fill_block(static_cast<std::size_t>(kCompareBlockBytes), fill);
  std::size_t next = 0;  // first excluded range that may still overlap the current chunk
  io_->for_each_chunk(payload(), payload_bytes_, name_,
                      [&](std::int64_t base, const std::uint8_t* chunk, std::int64_t n) {
                        std::int64_t pos = base;
                        const std::int64_t end = base + n;
                        while (pos < end) {
                          while (next < excluded.size() && excluded[next].end <= pos) ++next;
                          std::int64_t stop = end;
                          if (next < excluded.size() && excluded[next].begin <= pos) {
                            pos = std::min(end, excluded[next].end);  // skip the excluded part
                            continue;
                          }
                          if (next < excluded.size()) stop = std::min(stop, excluded[next].begin);
                          const std::uint8_t* p = chunk + (pos - base);
                          const std::int64_t len = stop - pos;
                          r.scanned_bytes += len;
                          for (std::int64_t block = 0; block < len; block += kCompareBlockBytes) {
                            const std::int64_t block_len = std::min(kCompareBlockBytes, len - block);
                            if (std::memcmp(p + block, fill_block.data(), static_cast<std::size_t>(block_len)) == 0)
                              continue;
                            for (std::int64_t i = block; i < block + block_len; ++i) {
                              if (p[i] == fill) continue;
                              ++r.differing_bytes;
                              if (r.first.size() < max_reported) r.first.push_back({pos + i, p[i]});
                            }
                          }
                          pos = stop;
                        }
                      });
  return r;
}

void GuardedDeviceBuffer::check_guards(std::vector<BufferDamage>* damage) const {
  check_guard_zone(kGuardBeforeRegion, allocation_.base(), layout_.guard_before, -layout_.guard_before, damage);
  check_guard_zone(kGuardAfterRegion, payload() + payload_bytes_, layout_.guard_after, payload_bytes_, damage);
}

void GuardedDeviceBuffer::check_guard_zone(const char* region, const std::uint8_t* zone, std::int64_t n,
                                           std::int64_t first_offset, std::vector<BufferDamage>* damage) const {
  BufferDamage d;
  d.buffer = name_;
  d.region = region;
  std::vector<std::uint8_t> bytes;
  for (const std::int64_t block : io_->blocks_off_guard(zone, n, std::string(region) + " " + name_)) {
    const std::int64_t begin = block * kGuardScanBlockBytes;
    const std::int64_t count = std::min(kGuardScanBlockBytes, n - begin);
    bytes.resize(static_cast<std::size_t>(count));
    io_->download(zone + begin, count, bytes.data(), name_);
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t at = begin + i;
      const std::uint8_t want = guard_pattern_byte(at);
      const std::uint8_t got = bytes[static_cast<std::size_t>(i)];
      if (got == want) continue;
      if (d.bytes++ == 0) d.offset = first_offset + at, d.expected = want, d.actual = got;
      const std::int64_t offset = first_offset + at;
      if (!d.changed.empty() && (d.changed.back().end == offset || d.changed.size() == BufferDamage::kMaxChangedRanges))
        d.changed.back().end = offset + 1;
      else
        d.changed.push_back({offset, offset + 1});
    }
  }
  if (d.bytes > 0) damage->push_back(d);
}

void GuardedDeviceBuffer::check_payload(const std::string& region, std::vector<BufferDamage>* damage) const {
  compare_region(
      *io_, name_, region, payload(), payload_bytes_, 0,
      [&](std::int64_t base, std::int64_t n, std::vector<std::uint8_t>* out) { expected_bytes(base, n, out); }, damage);
}

void GuardedDeviceBuffer::expected_bytes(std::int64_t base, std::int64_t n, std::vector<std::uint8_t>* out) const {
  out->assign(static_cast<std::size_t>(n), fill_);
  for (const Patch& patch : patches_) {
    const std::vector<std::uint8_t>& bytes = patch.bytes();
    const std::int64_t lo = std::max(base, patch.offset);
    const std::int64_t hi = std::min(base + n, patch.offset + static_cast<std::int64_t>(bytes.size()));
    if (lo < hi)
      std::memcpy(out->data() + (lo - base), bytes.data() + (lo - patch.offset), static_cast<std::size_t>(hi - lo));
  }
}

}  // namespace kvc::testkit
