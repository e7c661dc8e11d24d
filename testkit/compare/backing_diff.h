// backing_diff.h: the one comparator: a whole-backing byte diff, explained through the codec.
//
// Every differing byte is located (page, slot, field, block, dim) by the oracle's record codec,
// marked as belonging to an addressed slot or to a foreign one (a record the case never
// addressed), and printed with both raw bytes and the decoded field values. The console report is
// bounded: a count by field, then the first and last few mismatches.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/oracle/record_codec.h"
#include "testkit/compare/byte_class.h"

namespace kvc::testkit {

struct ByteMismatch {
  std::int64_t offset = 0;
  std::uint8_t expected = 0;
  std::uint8_t actual = 0;
  oracle::ByteLocation location;
  bool foreign_slot = false;  // a record byte of a slot the case did not address
};

struct DiffReport {
  std::int64_t compared_bytes = 0;
  std::int64_t mismatch_count = 0;
  bool size_mismatch = false;
  std::vector<ByteMismatch> first;                   // up to kShown, ascending offset
  std::vector<ByteMismatch> last;                    // up to kShown, the last ones (no overlap with `first`)
  std::map<ByteClass, std::int64_t> count_by_class;  // listed in the order of the classes' names
  static constexpr std::size_t kShown = 5;

  bool equal() const { return mismatch_count == 0 && !size_mismatch; }
};

// The class a mismatch is counted under: its field's, or kForeignSlot for record bytes of a slot
// that is not in `addressed_slots`.
ByteClass mismatch_class(const ByteMismatch& m);

DiffReport diff_backings(const std::vector<std::uint8_t>& expected, const std::vector<std::uint8_t>& actual,
                         const oracle::PagedCacheView& view, const std::set<std::int64_t>& addressed_slots);

struct ReportContext {
  std::string expected_name = "expected";
  std::string actual_name = "actual";
  std::string case_description;  // format, shape, seed
  std::string reproduce;         // the command that reproduces the failure
  float fp8_scale = 1.0f;
};

std::string format_report(const DiffReport& report, const std::vector<std::uint8_t>& expected,
                          const std::vector<std::uint8_t>& actual, const oracle::PagedCacheView& view,
                          const ReportContext& context);

// The case's cache as the codec sees it, and the slots it addresses (slot >= 0, rows < M).
oracle::PagedCacheView view_of(const InsertCase& c);
std::set<std::int64_t> addressed_slots(const InsertCase& c);

// The upstream DSpark test's written/not-written half: a backing prefilled with kCanary holds a
// written byte exactly when the case has a live slot. "" when it does, else what went wrong.
std::string written_iff_live_defect(const InsertCase& c, const std::vector<std::uint8_t>& backing);

// diff_backings + format_report with the view, addressed slots and fp8 scale taken from the case.
DiffReport diff_case_backings(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                              const std::vector<std::uint8_t>& actual);
std::string format_case_report(const InsertCase& c, const DiffReport& report, const std::vector<std::uint8_t>& expected,
                               const std::vector<std::uint8_t>& actual, ReportContext context);

// Two sets of outputs of one case, compared whole (two runs of a library, two ops, two grids):
// "" when both the cache and q_out are equal, else the cache's report (format_case_report) and
// q_out's (q_out_diff.h).
std::string outputs_difference_report(const InsertCase& c, const InsertOutputs& expected, const InsertOutputs& actual,
                                      const ReportContext& ctx);

// The locality check of an op that must write only its addressed records (a valid call, or a
// rejected one that must write nothing): "" when no byte outside the addressed records changed
// between `before` and `after` (page padding, row gaps, foreign slots, outside the view); else
// "bytes outside the addressed records changed (<every such class>)", a line per row whose
// out-of-range slot explains bytes outside the cache (out_of_range_rows.h: "row 3, slot 32 >=
// capacity 32 (contract §5.4): 256 bytes written past the cache end"), and the diff's report.
std::string stray_write_report(const InsertCase& c, const std::vector<std::uint8_t>& before,
                               const std::vector<std::uint8_t>& after, const ReportContext& ctx);

}  // namespace kvc::testkit
