// out_of_range_rows_test.cpp: writes outside the cache are blamed on the rows whose slot addresses
// them, every such row named, on planted damage: records written past the end, at page -1, from a
// slot narrowed to 32 bits, in another record layout, and bytes no row addresses. Then the same
// lines in the locality report and the mismatch classifier.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kvc/oracle/record_codec.h"
#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/small_cases.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/compare/out_of_range_rows.h"

namespace kvc {
namespace {

using testkit::ByteRange;

constexpr std::int64_t kBlockSize = 16;
constexpr std::int64_t kPages = 2;
constexpr std::int64_t kCapacity = kPages * kBlockSize;

// Two packed584 pages of 16 tokens, dense, at `base` in the backing.
oracle::PagedCacheView packed_view(std::int64_t base = 0) {
  oracle::PagedCacheView v;
  v.format = RecordFormat::kPacked584;
  v.base_offset = base;
  v.num_blocks = kPages;
  v.block_size = kBlockSize;
  v.page_stride_bytes = kBlockSize * 584;
  return v;
}

// The byte ranges of slot `s`'s record (data and scale group) under the contract's layout,
// extended past the cache and before it with floor division.
std::vector<ByteRange> record_of(const oracle::PagedCacheView& v, std::int64_t s) {
  const std::int64_t page = s >= 0 ? s / v.block_size : -((-s + v.block_size - 1) / v.block_size);
  const std::int64_t token = s - page * v.block_size;
  const std::int64_t page_at = v.base_offset + page * v.page_stride_bytes;
  const RecordLayout& l = v.layout();
  if (!l.paged_regions)
    return {{page_at + token * v.token_stride_bytes, page_at + token * v.token_stride_bytes + l.data_bytes}};
  const std::int64_t data = page_at + token * l.data_bytes;
  const std::int64_t scales = page_at + v.block_size * l.data_bytes + token * l.scale_bytes;
  return {{data, data + l.data_bytes}, {scales, scales + l.scale_bytes}};
}

std::vector<ByteRange> records_of(const oracle::PagedCacheView& v, const std::vector<std::int64_t>& slots) {
  std::vector<ByteRange> out;
  for (std::int64_t s : slots)
    for (const ByteRange& r : record_of(v, s)) out.push_back(r);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// Defect caught: a past-end record reported as unaddressed or as a foreign slot, or counted short.
TEST(OutOfRangeRows, RecordPastTheEndIsNamedWithItsRowSlotAndCapacity) {
  const oracle::PagedCacheView v = packed_view();
  const testkit::OutOfBoundsWrites w =
      testkit::attribute_out_of_bounds_writes(v, {5, kCapacity, 9}, record_of(v, kCapacity));
  ASSERT_EQ(w.rows.size(), 1u);
  EXPECT_EQ(w.rows[0].placement.row, 1);
  EXPECT_EQ(w.rows[0].bytes, 584);
  EXPECT_EQ(w.unaddressed_after, 0);
  EXPECT_EQ(joined(w.lines()), "row 1, slot 32 >= capacity 32 (contract §5.4): 584 bytes written past the cache end\n");
}

// Defect caught: a negative slot's floor-division record (page -1, in the guard before the cache)
// not blamed on its row.
TEST(OutOfRangeRows, NegativeSlotRecordAtPageMinusOneIsNamed) {
  const oracle::PagedCacheView v = packed_view();
  const std::vector<ByteRange> changed = record_of(v, -1);
  ASSERT_LT(changed[0].begin, 0) << "page -1 lies before the backing: a device guard zone holds it";
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, {3, -1}, changed);
  EXPECT_EQ(joined(w.lines()), "row 1, slot -1: page -1, 584 bytes before the cache\n");
}

// Defect caught: only the first bad row named when several write into one guard zone.
TEST(OutOfRangeRows, EveryBadRowInOneGuardZoneIsNamed) {
  const oracle::PagedCacheView v = packed_view(4096);
  const std::vector<std::int64_t> slots = {kCapacity + 7, 1, kCapacity, -1, kCapacity + 15, -16};
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(
      v, slots, records_of(v, {kCapacity, kCapacity + 7, kCapacity + 15, -1, -16}));
  const std::string text = joined(w.lines());
  EXPECT_EQ(text,
            "row 0, slot 39 >= capacity 32 (contract §5.4): 584 bytes written past the cache end\n"
            "row 2, slot 32 >= capacity 32 (contract §5.4): 584 bytes written past the cache end\n"
            "row 3, slot -1: page -1, 584 bytes before the cache\n"
            "row 4, slot 47 >= capacity 32 (contract §5.4): 584 bytes written past the cache end\n"
            "row 5, slot -16: page -1, 584 bytes before the cache\n");
}

// Defect caught: an unbounded list (or one silently cut) when many rows are bad.
TEST(OutOfRangeRows, ListIsCappedWithTheNumberLeftOut) {
  const oracle::PagedCacheView v = packed_view();
  std::vector<std::int64_t> slots;
  for (std::int64_t k = 0; k < 40; ++k) slots.push_back(kCapacity + k);
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, slots, records_of(v, slots));
  ASSERT_EQ(w.rows.size(), 40u);
  const std::vector<std::string> lines = w.lines();
  ASSERT_EQ(lines.size(), testkit::OutOfBoundsWrites::kMaxNamedRows + 1);
  EXPECT_EQ(lines.back(), "... and 8 more rows");
}

// Defect caught: bytes outside the cache that no row addresses blamed on some row, or dropped;
// bytes inside the cache counted as out of bounds.
TEST(OutOfRangeRows, BytesNoRowAddressesAreNamedApartAndTheCacheIsLeftOut) {
  const oracle::PagedCacheView v = packed_view();
  const std::int64_t end = kPages * v.page_stride_bytes;
  // Page 5 (no row lands there), 10 bytes; 3 bytes before the cache; 100 bytes inside it.
  const std::vector<ByteRange> changed = {
      {end + 3 * v.page_stride_bytes, end + 3 * v.page_stride_bytes + 10}, {-3, 0}, {100, 200}};
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, {kCapacity}, changed);
  EXPECT_TRUE(w.rows.empty());
  EXPECT_EQ(joined(w.lines()),
            "3 bytes before the cache that no row addresses, first at backing offset -3\n"
            "10 bytes past the cache end that no row addresses, first at backing offset " +
                std::to_string(end + 3 * v.page_stride_bytes) + "\n");
}

// Defect caught: a kernel with another record layout (a contiguous 584-byte record at token *
// 584) leaves bytes that are no record's unnamed; they go to the row placed on that page.
TEST(OutOfRangeRows, BytesOfAnotherRecordLayoutGoToTheRowOnTheirPage) {
  const oracle::PagedCacheView v = packed_view();
  const std::int64_t end = kPages * v.page_stride_bytes;
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, {kCapacity}, {{end, end + 584}});
  EXPECT_EQ(joined(w.lines()), "row 0, slot 32 >= capacity 32 (contract §5.4): 584 bytes written past the cache end\n");
}

// Defect caught: a slot narrowed to 32 bits (2^32 - 1 -> -1) not recognised as the page -1 write.
TEST(OutOfRangeRows, SlotNarrowedTo32BitsIsNamedWithItsLowBits) {
  const oracle::PagedCacheView v = packed_view();
  const std::int64_t slot = (std::int64_t{1} << 32) - 1;
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, {slot}, record_of(v, -1));
  EXPECT_EQ(joined(w.lines()),
            "row 0, slot 4294967295 >= capacity 32 (contract §5.4) (its low 32 bits: -1): page -1, 584 bytes before "
            "the cache\n");
}

// Defect caught: two rows with the same out-of-range slot counted twice, or the second not named.
TEST(OutOfRangeRows, RowsSharingARecordAreNamedTogether) {
  const oracle::PagedCacheView v = packed_view();
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, {40, 2, 40}, record_of(v, 40));
  EXPECT_EQ(joined(w.lines()),
            "row 0, slot 40 >= capacity 32 (contract §5.4): 584 bytes written past the cache end (row 2 addresses the "
            "same record)\n");
}

// Defect caught: a full cache's row (token stride with a gap) placed with the packed layout.
TEST(OutOfRangeRows, FullCacheRowsUseTheTokenStride) {
  oracle::PagedCacheView v = packed_view();
  v.format = RecordFormat::kFp8_512;
  v.token_stride_bytes = 528;
  v.page_stride_bytes = kBlockSize * 528;
  const std::vector<ByteRange> changed = record_of(v, kCapacity + 3);
  ASSERT_EQ(changed.size(), 1u);
  const testkit::OutOfBoundsWrites w = testkit::attribute_out_of_bounds_writes(v, {kCapacity + 3, kCapacity}, changed);
  EXPECT_EQ(joined(w.lines()), "row 0, slot 35 >= capacity 32 (contract §5.4): 512 bytes written past the cache end\n");
}

// Defect caught: the likely culprits of a fault not listed, past-end rows not first, no distance.
TEST(OutOfRangeRows, CulpritLinesListOutOfRangeRowsWithTheirDistance) {
  const oracle::PagedCacheView v = packed_view();
  const std::vector<std::string> lines = testkit::out_of_range_row_lines(v, {-1, 3, 1032});
  const std::int64_t far = (1032 / kBlockSize - kPages) * v.page_stride_bytes + (1032 % kBlockSize) * 576;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "row 2, slot 1032 >= capacity 32 (contract §5.4): page 64, its record from " +
                          std::to_string(far) + " bytes past the cache end");
  EXPECT_EQ(lines[1], "row 0, slot -1: page -1, its record from 704 bytes before the cache");
  EXPECT_TRUE(testkit::out_of_range_row_lines(v, {0, 31}).empty());
}

// The case-level entry points over a small valid case whose row 1 addresses the slot past the
// cache, written past the end into the backing's tail.
struct PastEndCase {
  InsertCase c;
  std::vector<std::uint8_t> before, after;
};

PastEndCase past_end_case(RecordFormat f) {
  PastEndCase p{testkit::small_valid_case(InsertOp::kKvOnly, f), {}, {}};
  const std::int64_t capacity = p.c.cache.num_blocks * p.c.block_size;
  p.c.slots.store<std::int64_t>(1, capacity);
  p.before = testkit::make_backing(p.c.cache);
  p.after = p.before;
  const std::int64_t end = p.c.cache.backing_bytes();
  std::fill(p.after.begin() + end, p.after.end(), 0x5A);  // the whole tail: kGuardBytes
  return p;
}

// Defect caught: the locality report says only "outside the cache" for a row that addresses it.
TEST(OutOfRangeRows, StrayWriteReportNamesTheRow) {
  const PastEndCase p = past_end_case(RecordFormat::kPacked584);
  const std::string report = testkit::stray_write_report(p.c, p.before, p.after, {});
  EXPECT_NE(report.find("row 1, slot 32 >= capacity 32 (contract §5.4): 256 bytes written past the cache end"),
            std::string::npos)
      << report;
}

// Defect caught: the classifier's untouched-region site not naming the row.
TEST(OutOfRangeRows, MismatchClassifierNamesTheRow) {
  const PastEndCase p = past_end_case(RecordFormat::kBf16_512);
  // The oracle's bytes: the case with the bad row skipped, as the contract has it.
  InsertCase skipped = p.c;
  skipped.slots.store<std::int64_t>(1, -1);
  InsertOutputs expected = testkit::make_outputs(skipped);
  ASSERT_TRUE(testkit::OracleBackend().run(skipped, expected).ok());
  std::vector<std::uint8_t> actual = expected.cache;
  std::fill(actual.begin() + p.c.cache.backing_bytes(), actual.end(), 0x5A);
  // A policy report given: the checker would run the oracle on the case as sent, which it refuses.
  const testkit::PolicyReport policy;
  const testkit::MismatchClassification m =
      testkit::classify_insert_mismatches(p.c, kvc::Profile{}, p.before, expected.cache, actual, &policy);
  ASSERT_EQ(m.count(testkit::MismatchClass::kUntouchedRegion), 1) << m.report();
  EXPECT_NE(m.report().find("row 1, slot 32 >= capacity 32 (contract §5.4): 256 bytes written past the cache end"),
            std::string::npos)
      << m.report();
}

}  // namespace
}  // namespace kvc
