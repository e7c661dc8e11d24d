// backing_diff.cpp: whole-backing diff and report (see backing_diff.h).
#include "testkit/compare/backing_diff.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "testkit/backends/backing.h"
#include "testkit/compare/out_of_range_rows.h"
#include "testkit/compare/q_out_diff.h"

namespace kvc::testkit {
namespace {

std::string describe_location(const ByteMismatch& m, const oracle::PagedCacheView& v) {
  const oracle::ByteLocation& l = m.location;
  std::ostringstream s;
  s << "offset " << m.offset;
  if (l.field == oracle::Field::kOutsideCache) {
    s << " [outside the cache view: guard zone or before the first page]";
    return s.str();
  }
  s << " page " << l.page;
  if (l.field == oracle::Field::kPagePadding) {
    s << " [page padding, byte " << (m.offset - v.page_offset(l.page)) << " of the page]";
    return s.str();
  }
  s << " token " << l.index_in_page << " (slot " << l.slot << ")";
  s << " [" << oracle::field_name(l.field);
  if (l.dim >= 0) s << " dim " << l.dim;
  if (l.field == oracle::Field::kValue16) s << (l.byte_in_value ? " high byte" : " low byte");
  if (l.scale_block >= 0) s << " block " << l.scale_block;
  s << "]";
  if (m.foreign_slot) s << " FOREIGN SLOT (not addressed by the case)";
  return s.str();
}

}  // namespace

ByteClass mismatch_class(const ByteMismatch& m) {
  return m.foreign_slot ? ByteClass::kForeignSlot : byte_class(m.location.field);
}

DiffReport diff_backings(const std::vector<std::uint8_t>& expected, const std::vector<std::uint8_t>& actual,
                         const oracle::PagedCacheView& view, const std::set<std::int64_t>& addressed_slots) {
  DiffReport r;
  r.size_mismatch = expected.size() != actual.size();
  const std::size_t n = std::min(expected.size(), actual.size());
  r.compared_bytes = static_cast<std::int64_t>(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (expected[i] == actual[i]) continue;
    ByteMismatch m;
    m.offset = static_cast<std::int64_t>(i);
    m.expected = expected[i];
    m.actual = actual[i];
    m.location = oracle::locate(view, m.offset);
    m.foreign_slot = byte_class(m.location, addressed_slots) == ByteClass::kForeignSlot;
    ++r.mismatch_count;
    ++r.count_by_class[mismatch_class(m)];
    if (r.first.size() < DiffReport::kShown) {
      r.first.push_back(m);
    } else {
      r.last.push_back(m);
      if (r.last.size() > DiffReport::kShown) r.last.erase(r.last.begin());
    }
  }
  return r;
}

std::string format_report(const DiffReport& r, const std::vector<std::uint8_t>& expected,
                          const std::vector<std::uint8_t>& actual, const oracle::PagedCacheView& view,
                          const ReportContext& ctx) {
  std::ostringstream s;
  s << ctx.actual_name << " vs " << ctx.expected_name << ": " << layout_of(view.format).name << ", " << view.num_blocks
    << " pages x " << view.block_size << " tokens, page stride " << view.page_stride_bytes << " B";
  if (!ctx.case_description.empty()) s << ", " << ctx.case_description;
  s << "\n";
  if (r.size_mismatch) s << "  backing sizes differ: " << expected.size() << " vs " << actual.size() << " bytes\n";
  char pct[32];
  std::snprintf(
      pct, sizeof pct, "%.4f",
      r.compared_bytes ? 100.0 * static_cast<double>(r.mismatch_count) / static_cast<double>(r.compared_bytes) : 0.0);
  s << "  " << r.mismatch_count << " mismatching bytes (" << pct << "% of " << r.compared_bytes << ")\n";
  for (const auto& [cls, count] : r.count_by_class) s << "    " << name(cls) << ": " << count << "\n";
  auto line = [&](const ByteMismatch& m) {
    char bytes[64];
    std::snprintf(bytes, sizeof bytes, "expected 0x%02x actual 0x%02x", m.expected, m.actual);
    s << "  " << describe_location(m, view) << ": " << bytes;
    if (is_record_byte(byte_class(m.location.field))) {
      s << "\n      expected " << oracle::describe_field(expected, view, m.location, ctx.fp8_scale)
        << "\n      actual   " << oracle::describe_field(actual, view, m.location, ctx.fp8_scale);
    }
    s << "\n";
  };
  for (const ByteMismatch& m : r.first) line(m);
  if (!r.last.empty()) {
    if (r.mismatch_count > static_cast<std::int64_t>(r.first.size() + r.last.size())) s << "  ...\n";
    for (const ByteMismatch& m : r.last) line(m);
  }
  if (!ctx.reproduce.empty()) s << "  reproduce: " << ctx.reproduce << "\n";
  return s.str();
}

oracle::PagedCacheView view_of(const InsertCase& c) {
  const auto f = format_of(c);
  return oracle::PagedCacheView::of(c.cache, f ? *f : RecordFormat::kPacked584, c.kv.meta.dtype);
}

std::set<std::int64_t> addressed_slots(const InsertCase& c) {
  std::set<std::int64_t> slots;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    if (s >= 0) slots.insert(s);
  }
  return slots;
}

std::string written_iff_live_defect(const InsertCase& c, const std::vector<std::uint8_t>& backing) {
  const bool all_canary = std::all_of(backing.begin(), backing.end(), [](std::uint8_t b) { return b == kCanary; });
  const bool any_live = !addressed_slots(c).empty();
  if (all_canary == !any_live) return {};
  return any_live ? "live slots but nothing was written" : "all slots -1 but bytes changed";
}

DiffReport diff_case_backings(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                              const std::vector<std::uint8_t>& actual) {
  return diff_backings(expected, actual, view_of(c), addressed_slots(c));
}

std::string format_case_report(const InsertCase& c, const DiffReport& report, const std::vector<std::uint8_t>& expected,
                               const std::vector<std::uint8_t>& actual, ReportContext context) {
  if (c.fp8_scale.present) context.fp8_scale = c.fp8_scale.load<float>(0);
  return format_report(report, expected, actual, view_of(c), context);
}

std::string stray_write_report(const InsertCase& c, const std::vector<std::uint8_t>& before,
                               const std::vector<std::uint8_t>& after, const ReportContext& ctx) {
  const DiffReport written = diff_case_backings(c, before, after);
  std::string classes;
  for (const ByteClass stray : kOutsideAddressedRecords) {
    if (written.count_by_class.count(stray) == 0) continue;
    classes += (classes.empty() ? "" : ", ") + std::string(name(stray));
  }
  if (classes.empty()) return "";
  // Rows whose slot puts their record outside the cache are named before the bytes: the diff alone
  // says only that bytes outside the view changed.
  std::string rows;
  for (const std::string& line : attribute_out_of_bounds_writes(c, changed_ranges(before, after)).lines())
    rows += "  " + line + "\n";
  return "bytes outside the addressed records changed (" + classes + ")\n" + rows +
         format_case_report(c, written, before, after, ctx);
}

std::string outputs_difference_report(const InsertCase& c, const InsertOutputs& expected, const InsertOutputs& actual,
                                      const ReportContext& ctx) {
  std::string text;
  if (expected.cache != actual.cache)
    text +=
        format_case_report(c, diff_case_backings(c, expected.cache, actual.cache), expected.cache, actual.cache, ctx);
  return text + q_out_difference_report(c, expected.q_out, actual.q_out);
}

}  // namespace kvc::testkit
