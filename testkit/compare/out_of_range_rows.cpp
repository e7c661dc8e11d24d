// out_of_range_rows.cpp: blaming writes outside the cache on the rows that address them (see
// out_of_range_rows.h).
#include "testkit/compare/out_of_range_rows.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "kvc/checked_math.h"
#include "testkit/compare/backing_diff.h"

namespace kvc::testkit {
namespace {

bool usable(const oracle::PagedCacheView& v) {
  return v.block_size > 0 && v.page_stride_bytes > 0 && v.num_blocks >= 0;
}

// num_blocks * bs; a capacity past int64 holds every int64 slot.
std::int64_t capacity_of(const oracle::PagedCacheView& v) {
  return checked_mul(v.num_blocks, v.block_size).value_or(std::numeric_limits<std::int64_t>::max());
}

// Floor division of a by b > 0, never overflowing.
std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b < 0 ? 1 : 0); }

// Where `used` puts the record of row `row` (slot `slot`), when that is outside the cache.
std::optional<OutOfRangePlacement> place_outside(const oracle::PagedCacheView& v, std::int64_t row, std::int64_t slot,
                                                 std::int64_t used) {
  OutOfRangePlacement p;
  p.row = row;
  p.slot = slot;
  p.used_slot = used;
  p.page = floor_div(used, v.block_size);
  p.token = used % v.block_size;
  if (p.token < 0) p.token += v.block_size;
  if (p.page >= 0 && p.page < v.num_blocks) return std::nullopt;
  p.side = p.page < 0 ? CacheSide::kBeforeStart : CacheSide::kPastEnd;
  return p;
}

// One record's bytes in the backing: the data (or full-cache row) and, for packed formats, the
// scale group (pad included).
struct RecordExtent {
  std::int64_t data_begin = 0, data_end = 0;
  std::int64_t scale_begin = 0, scale_end = 0;  // empty for full caches
};

std::optional<RecordExtent> extent_of(const oracle::PagedCacheView& v, const OutOfRangePlacement& p) {
  const RecordLayout& l = v.layout();
  const CheckedI64 page = checked_mul_add(p.page, v.page_stride_bytes, v.base_offset);
  const CheckedI64 data = checked_mul_add(p.token, l.paged_regions ? l.data_bytes : v.token_stride_bytes, page);
  const CheckedI64 data_end = checked_add(data, CheckedI64{l.data_bytes});
  if (!data_end) return std::nullopt;
  RecordExtent e{*data, *data_end, *data_end, *data_end};
  if (l.paged_regions) {
    const CheckedI64 scales =
        checked_add(checked_mul_add(v.block_size, l.data_bytes, page), checked_mul(p.token, l.scale_bytes));
    const CheckedI64 scales_end = checked_add(scales, CheckedI64{l.scale_bytes});
    if (!scales_end) return std::nullopt;
    e.scale_begin = *scales;
    e.scale_end = *scales_end;
  }
  return e;
}

std::string bytes_text(std::int64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

// "row 3, slot 1032 >= capacity 32 (contract §5.4)" or "row 2, slot -1 (its low 32 bits: -1)".
std::string row_and_slot(const OutOfRangePlacement& p, std::int64_t capacity) {
  std::string s = "row " + std::to_string(p.row) + ", slot " + std::to_string(p.slot);
  if (p.slot >= capacity) s += " >= capacity " + std::to_string(capacity) + " (contract §5.4)";
  if (p.narrowed()) s += " (its low 32 bits: " + std::to_string(p.used_slot) + ")";
  return s;
}

std::string more_rows(std::size_t n) { return "... and " + std::to_string(n) + " more row" + (n == 1 ? "" : "s"); }

// The records of one page that placements land on, ascending (by token, so by data and by scale
// offset alike), each with the candidate it belongs to.
struct PageRecord {
  RecordExtent extent;
  std::size_t candidate = 0;
};

// The candidate a changed byte at `x` of a page is blamed on: the record holding it, else the
// record starting last at or before it, else the page's first.
std::size_t blame_on_page(const std::vector<PageRecord>& records, std::int64_t x) {
  const auto after_data =
      std::upper_bound(records.begin(), records.end(), x,
                       [](std::int64_t off, const PageRecord& r) { return off < r.extent.data_begin; });
  if (after_data != records.begin() && x < std::prev(after_data)->extent.data_end)
    return std::prev(after_data)->candidate;
  const auto after_scale =
      std::upper_bound(records.begin(), records.end(), x,
                       [](std::int64_t off, const PageRecord& r) { return off < r.extent.scale_begin; });
  if (after_scale != records.begin() && x < std::prev(after_scale)->extent.scale_end)
    return std::prev(after_scale)->candidate;
  return after_data != records.begin() ? std::prev(after_data)->candidate : records.front().candidate;
}

// Sorted, overlaps and neighbours merged, empty ranges dropped.
std::vector<ByteRange> merged(std::vector<ByteRange> ranges) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(), [](const ByteRange& r) { return r.end <= r.begin; }),
               ranges.end());
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!out.empty() && r.begin <= out.back().end)
      out.back().end = std::max(out.back().end, r.end);
    else
      out.push_back(r);
  }
  return out;
}

}  // namespace

std::vector<OutOfRangePlacement> out_of_range_placements(const oracle::PagedCacheView& v,
                                                         const std::vector<std::int64_t>& slots) {
  std::vector<OutOfRangePlacement> out;
  if (!usable(v)) return out;
  const std::int64_t capacity = capacity_of(v);
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const std::int64_t slot = slots[t];
    if (slot >= 0 && slot < capacity) continue;
    const auto row = static_cast<std::int64_t>(t);
    if (auto p = place_outside(v, row, slot, slot)) out.push_back(*p);
    const auto low32 = static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(slot)));
    if (low32 != slot)
      if (auto p = place_outside(v, row, slot, low32)) out.push_back(*p);
  }
  return out;
}

std::vector<std::string> OutOfBoundsWrites::lines() const {
  std::vector<std::string> out;
  const std::size_t shown = std::min(rows.size(), kMaxNamedRows);
  for (std::size_t i = 0; i < shown; ++i) {
    const BlamedRow& b = rows[i];
    std::string s = row_and_slot(b.placement, capacity) + ": ";
    if (b.placement.side == CacheSide::kPastEnd)
      s += bytes_text(b.bytes) + " written past the cache end";
    else
      s += "page " + std::to_string(b.placement.page) + ", " + bytes_text(b.bytes) + " before the cache";
    if (!b.same_record_rows.empty()) {
      const bool one = b.same_record_rows.size() == 1;
      s += one ? " (row" : " (rows";
      for (std::size_t k = 0; k < b.same_record_rows.size(); ++k)
        s += (k == 0 ? " " : ", ") + std::to_string(b.same_record_rows[k]);
      s += one ? " addresses the same record)" : " address the same record)";
    }
    out.push_back(s);
  }
  if (rows.size() > shown) out.push_back(more_rows(rows.size() - shown));
  if (unaddressed_before > 0)
    out.push_back(bytes_text(unaddressed_before) + " before the cache that no row addresses, first at backing offset " +
                  std::to_string(first_unaddressed_before));
  if (unaddressed_after > 0)
    out.push_back(bytes_text(unaddressed_after) +
                  " past the cache end that no row addresses, first at backing offset " +
                  std::to_string(first_unaddressed_after));
  return out;
}

OutOfBoundsWrites attribute_out_of_bounds_writes(const oracle::PagedCacheView& v,
                                                 const std::vector<std::int64_t>& slots,
                                                 std::vector<ByteRange> changed) {
  OutOfBoundsWrites w;
  if (!usable(v)) return w;
  w.capacity = capacity_of(v);
  const CheckedI64 cache_end = checked_mul_add(v.num_blocks, v.page_stride_bytes, v.base_offset);
  if (!cache_end) return w;

  // One candidate per record; rows placed on a record already taken are named with it.
  std::vector<BlamedRow> candidates;
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> by_record;
  std::map<std::int64_t, std::vector<PageRecord>> pages;
  for (const OutOfRangePlacement& p : out_of_range_placements(v, slots)) {
    const auto [it, added] = by_record.emplace(std::make_pair(p.page, p.token), candidates.size());
    if (!added) {
      candidates[it->second].same_record_rows.push_back(p.row);
      continue;
    }
    candidates.push_back(BlamedRow{p, {}, 0, 0});
    if (const auto e = extent_of(v, p)) pages[p.page].push_back({*e, it->second});
  }
  for (auto& [page, records] : pages)
    std::sort(records.begin(), records.end(),
              [](const PageRecord& a, const PageRecord& b) { return a.extent.data_begin < b.extent.data_begin; });

  auto unaddressed = [&](std::int64_t x, std::int64_t n) {
    std::int64_t& count = x < v.base_offset ? w.unaddressed_before : w.unaddressed_after;
    std::int64_t& first = x < v.base_offset ? w.first_unaddressed_before : w.first_unaddressed_after;
    if (count == 0) first = x;
    count += n;
  };
  // [a, b) lies wholly before or wholly past the cache: walk it page by page.
  auto blame = [&](std::int64_t a, std::int64_t b) {
    for (std::int64_t x = a; x < b;) {
      const std::int64_t page = floor_div(x - v.base_offset, v.page_stride_bytes);
      const std::int64_t page_end = checked_mul_add(page + 1, v.page_stride_bytes, v.base_offset)
                                        .value_or(std::numeric_limits<std::int64_t>::max());
      const std::int64_t stop = std::min(b, page_end);
      const auto records = pages.find(page);
      if (records == pages.end()) {
        unaddressed(x, stop - x);
      } else {
        for (; x < stop; ++x) {
          BlamedRow& row = candidates[blame_on_page(records->second, x)];
          if (row.bytes++ == 0) row.first_offset = x;
        }
      }
      x = stop;
    }
  };
  for (const ByteRange& r : merged(std::move(changed))) {
    if (r.begin < v.base_offset) blame(r.begin, std::min(r.end, v.base_offset));
    if (r.end > *cache_end) blame(std::max(r.begin, *cache_end), r.end);
  }
  for (BlamedRow& c : candidates)
    if (c.bytes > 0) w.rows.push_back(std::move(c));
  return w;
}

std::vector<std::int64_t> case_slots(const InsertCase& c) {
  std::vector<std::int64_t> slots;
  const TensorMeta& m = c.slots.meta;
  if (!c.slots.present || m.dtype != DType::kI64 || m.rank() != 1 || m.strides.size() != 1) return slots;
  const std::int64_t size = static_cast<std::int64_t>(c.slots.bytes.size());
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const CheckedI64 element = checked_mul(t, m.strides[0]);
    const CheckedI64 end =
        checked_add(checked_mul_add(element, CheckedI64{8}, CheckedI64{m.offset_bytes}), CheckedI64{std::int64_t{8}});
    if (!end || *end > size || *element < 0) break;
    slots.push_back(c.slots.load<std::int64_t>(*element));
  }
  return slots;
}

OutOfBoundsWrites attribute_out_of_bounds_writes(const InsertCase& c, std::vector<ByteRange> changed) {
  return attribute_out_of_bounds_writes(view_of(c), case_slots(c), std::move(changed));
}

std::vector<std::string> out_of_range_row_lines(const oracle::PagedCacheView& v,
                                                const std::vector<std::int64_t>& slots) {
  std::vector<OutOfRangePlacement> placements = out_of_range_placements(v, slots);
  std::stable_sort(placements.begin(), placements.end(),
                   [](const OutOfRangePlacement& a, const OutOfRangePlacement& b) {
                     return a.side == CacheSide::kPastEnd && b.side != CacheSide::kPastEnd;
                   });
  const std::int64_t capacity = capacity_of(v);
  const CheckedI64 cache_end = checked_mul_add(v.num_blocks, v.page_stride_bytes, v.base_offset);
  std::vector<std::string> out;
  const std::size_t shown = std::min(placements.size(), OutOfBoundsWrites::kMaxNamedRows);
  for (std::size_t i = 0; i < shown; ++i) {
    const OutOfRangePlacement& p = placements[i];
    std::string s = row_and_slot(p, capacity) + ": page " + std::to_string(p.page);
    const std::optional<RecordExtent> e = extent_of(v, p);
    const CheckedI64 distance = !e || !cache_end ? std::nullopt
                                : p.side == CacheSide::kPastEnd
                                    ? checked_add(e->data_begin, CheckedI64{-*cache_end})
                                    : checked_add(v.base_offset, CheckedI64{-e->data_begin});
    if (distance)
      s += ", its record from " + bytes_text(*distance) +
           (p.side == CacheSide::kPastEnd ? " past the cache end" : " before the cache");
    out.push_back(s);
  }
  if (placements.size() > shown) out.push_back(more_rows(placements.size() - shown));
  return out;
}

std::vector<std::string> out_of_range_row_lines(const InsertCase& c) {
  return out_of_range_row_lines(view_of(c), case_slots(c));
}

std::vector<ByteRange> changed_ranges(const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>& after) {
  std::vector<ByteRange> out;
  const std::size_t n = std::min(before.size(), after.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (before[i] == after[i]) continue;
    const auto at = static_cast<std::int64_t>(i);
    if (!out.empty() && out.back().end == at)
      out.back().end = at + 1;
    else
      out.push_back({at, at + 1});
  }
  return out;
}

}  // namespace kvc::testkit
