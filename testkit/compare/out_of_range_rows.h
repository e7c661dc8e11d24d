// out_of_range_rows.h: the rows of a case that address records outside its cache, and the bytes
// written outside the cache that each of them explains.
//
// A row whose slot lies outside [0, num_blocks * bs) writes nothing (contract §3.1: a negative
// slot; §5.4: kernels skip a slot past the cache). A kernel that writes it anyway puts the record
// where its address arithmetic does: page slot / bs, past the cache end, for a slot >= capacity;
// page floor(slot / bs) for a negative slot (SGLang's shift and mask: slot -1 is the last token of
// page -1, before the cache); and an index narrowed to 32 bits the same way from its low 32 bits.
// Bytes changed outside the cache (the backing's tail, or a device guard zone) are blamed on those
// rows: on the row whose record holds the byte, else on the row whose record starts last before it
// on the same page (a kernel with another record layout), else on no row. Every blamed row is
// named, up to kMaxNamedRows; bytes no row addresses are named apart.
//
// Pure CPU code over the slots, the cache view and the changed byte ranges: the device backend
// feeds it the cache's guard-zone damage, stray_write_report() and the mismatch classifier the
// host backing diff. Cost: O(log k) per changed byte outside the cache (k records on its page).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/oracle/record_codec.h"
#include "testkit/compare/byte_range.h"

namespace kvc::testkit {

// Which side of the cache a record outside it lies on.
enum class CacheSide : std::uint8_t { kBeforeStart, kPastEnd };

// Where the record of a row the contract skips lands when a kernel writes it anyway.
struct OutOfRangePlacement {
  std::int64_t row = 0;
  std::int64_t slot = 0;       // the case's slot
  std::int64_t used_slot = 0;  // what the address arithmetic used: the slot, or its low 32 bits
  std::int64_t page = 0;       // floor(used_slot / bs): < 0 before the cache, >= num_blocks past it
  std::int64_t token = 0;      // used_slot - page * bs, in [0, bs)
  CacheSide side = CacheSide::kPastEnd;
  bool narrowed() const { return used_slot != slot; }
};

// The placements outside the cache of the rows t < slots.size() whose slot lies outside
// [0, capacity): the slot itself, and for a slot outside int32 also its low 32 bits when they land
// outside the cache (a narrowed index inside the cache is another slot's record, not named here).
// By row. Empty for a view without a positive block size and page stride.
std::vector<OutOfRangePlacement> out_of_range_placements(const oracle::PagedCacheView& v,
                                                         const std::vector<std::int64_t>& slots);

// The changed bytes outside the cache blamed on one placement.
struct BlamedRow {
  OutOfRangePlacement placement;
  std::vector<std::int64_t> same_record_rows;  // later rows whose placement is the same record
  std::int64_t bytes = 0;
  std::int64_t first_offset = 0;  // backing offset of the first of them
};

struct OutOfBoundsWrites {
  static constexpr std::size_t kMaxNamedRows = 32;

  std::int64_t capacity = 0;
  std::vector<BlamedRow> rows;  // every placement blamed for a byte, by row
  // Changed bytes outside the cache that no row addresses, per side, and the first of each.
  std::int64_t unaddressed_before = 0;
  std::int64_t unaddressed_after = 0;
  std::int64_t first_unaddressed_before = 0;
  std::int64_t first_unaddressed_after = 0;

  bool empty() const { return rows.empty() && unaddressed_before == 0 && unaddressed_after == 0; }
  // "row 3, slot 32 >= capacity 32 (contract §5.4): 584 bytes written past the cache end",
  // "row 2, slot -1: page -1, 584 bytes before the cache", one per blamed row (the first
  // kMaxNamedRows, then "... and K more rows"); then one line per side with unaddressed bytes.
  std::vector<std::string> lines() const;
};

// Blames the changed bytes outside the cache on the rows that address them. `changed` holds
// backing offsets, in any order: negative before the backing (a device guard zone before it), at
// or past its size after it. Bytes inside the cache view are left out.
OutOfBoundsWrites attribute_out_of_bounds_writes(const oracle::PagedCacheView& v,
                                                 const std::vector<std::int64_t>& slots,
                                                 std::vector<ByteRange> changed);
// The same for a case: its view and the slots of its rows t < M.
OutOfBoundsWrites attribute_out_of_bounds_writes(const InsertCase& c, std::vector<ByteRange> changed);

// The slots of a case's rows t < M.
std::vector<std::int64_t> case_slots(const InsertCase& c);

// The rows whose slot lies outside the cache, with where their record would land: the likely
// culprits when a call faults. "row 1, slot 1032 >= capacity 32 (contract §5.4): page 64, 579584
// bytes past the cache end", "row 2, slot -1: page -1, 9344 bytes before the cache"; past-end rows
// first; at most kMaxNamedRows lines, then "... and K more rows". Empty when every slot is in range.
std::vector<std::string> out_of_range_row_lines(const oracle::PagedCacheView& v,
                                                const std::vector<std::int64_t>& slots);
std::vector<std::string> out_of_range_row_lines(const InsertCase& c);

// The ranges of offsets where `before` and `after` differ (the common length only).
std::vector<ByteRange> changed_ranges(const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>& after);

}  // namespace kvc::testkit
