// probe_writes.cpp: locating a probed call's writes (see probe_writes.h).
#include "testkit/probe/probe_writes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "kvc/oracle/record_codec.h"
#include "testkit/compare/byte_class.h"

namespace kvc::testkit {
namespace {

// Where one byte of an output lies.
struct Locus {
  WriteSite site = WriteSite::kOutsideRecords;
  std::string what;
  std::int64_t row = -1;
  std::int64_t slot = -1;
};
using Locator = std::function<Locus(std::int64_t offset)>;

// The values of a 1-D integer tensor (int64, or int32 widened), as far as its bytes hold them: a
// broken case may carry another dtype, rank or too few bytes, and must not be read past its end.
std::vector<std::int64_t> readable_indices(const HostTensor& t) {
  std::vector<std::int64_t> v;
  const std::int64_t width = t.meta.dtype == DType::kI64 ? 8 : t.meta.dtype == DType::kI32 ? 4 : 0;
  if (!t.present || width == 0 || t.meta.rank() != 1 || t.meta.strides.size() != 1) return v;
  for (std::int64_t i = 0; i < t.meta.size(0); ++i) {
    const std::int64_t at = t.meta.offset_bytes + i * t.meta.strides[0] * width;
    if (at < 0 || at + width > static_cast<std::int64_t>(t.bytes.size())) break;
    v.push_back(width == 8 ? t.load<std::int64_t>(i * t.meta.strides[0])
                           : static_cast<std::int64_t>(t.load<std::int32_t>(i * t.meta.strides[0])));
  }
  return v;
}

// A paged view the codec can walk: positive block size and strides, no overflowing extent.
bool walkable(const CacheGeometry& g, bool paged_regions) {
  return g.num_blocks >= 0 && g.block_size > 0 && g.checked_page_stride_bytes().has_value() &&
         g.page_stride_bytes() > 0 && g.checked_backing_bytes().has_value() &&
         (paged_regions || (g.checked_token_stride_bytes().has_value() && g.token_stride_bytes() > 0));
}

// A paged cache as the probe sees it: the view, which row writes which slot, and a byte's locus.
class PagedRecords {
 public:
  // `slots[t]` is row t's slot (rows past the slot tensor's end are never written).
  PagedRecords(const CacheGeometry& g, RecordFormat f, DType value_dtype, std::vector<std::int64_t> slots)
      : usable_(walkable(g, layout_of(f).paged_regions)),
        view_(oracle::PagedCacheView::of(g, f, value_dtype)),
        naive_stride_(g.checked_token_stride_bytes().value_or(0)),
        naive_width_(g.width * g.element_bytes()),
        slots_(std::move(slots)) {
    for (std::size_t t = 0; t < slots_.size(); ++t) {
      if (slots_[t] < 0) continue;
      addressed_.insert(slots_[t]);
      row_of_slot_.emplace(slots_[t], static_cast<std::int64_t>(t));
    }
  }

  std::int64_t capacity() const { return usable_ ? view_.capacity() : -1; }
  const std::vector<std::int64_t>& slots() const { return slots_; }

  Locus locate(std::int64_t offset) const {
    Locus l;
    if (!usable_) {
      l.what = "cache byte (the case's view cannot be walked)";
      return l;
    }
    const oracle::ByteLocation loc = oracle::locate(view_, offset);
    const ByteClass cls = byte_class(loc, addressed_);
    l.what = std::string(name(cls));
    if (is_record_byte(cls)) l.site = WriteSite::kAddressedRecord;
    if (loc.slot >= 0 && loc.field != oracle::Field::kPagePadding && loc.field != oracle::Field::kOutsideCache) {
      l.slot = loc.slot;
      if (auto it = row_of_slot_.find(loc.slot); it != row_of_slot_.end()) l.row = it->second;
    } else {
      attribute(offset, &l);
    }
    return l;
  }

  // Whether any byte of `slot`'s record differs between the two backings.
  bool record_changed(std::int64_t slot, const std::vector<std::uint8_t>& before,
                      const std::vector<std::uint8_t>& after) const {
    if (!usable_) return false;
    const RecordLayout& l = view_.layout();
    const auto differs = [&](std::int64_t begin, std::int64_t n) {
      for (std::int64_t i = begin; i < begin + n; ++i)
        if (i >= 0 && i < static_cast<std::int64_t>(before.size()) && i < static_cast<std::int64_t>(after.size()) &&
            before[static_cast<std::size_t>(i)] != after[static_cast<std::size_t>(i)])
          return true;
      return false;
    };
    return differs(oracle::token_data_offset(view_, slot), l.data_bytes) ||
           (l.paged_regions && differs(oracle::token_scale_offset(view_, slot), l.scale_bytes));
  }

 private:
  // The row whose record covers `offset`, its slot extrapolated past the cache if need be: the
  // record's data and scale regions, and the naive place page * stride(0) + i * stride(1) that a
  // kernel treating the record as one contiguous row would use.
  void attribute(std::int64_t offset, Locus* l) const {
    const RecordLayout& layout = view_.layout();
    const auto within = [offset](std::int64_t begin, std::int64_t n) { return offset >= begin && offset < begin + n; };
    for (std::size_t t = 0; t < slots_.size(); ++t) {
      const std::int64_t s = slots_[t];
      if (s < 0) continue;
      const std::int64_t page = s / view_.block_size, i = s % view_.block_size;
      if (within(oracle::token_data_offset(view_, s), layout.data_bytes) ||
          (layout.paged_regions && within(oracle::token_scale_offset(view_, s), layout.scale_bytes)) ||
          within(view_.page_offset(page) + i * naive_stride_, naive_width_)) {
        l->row = static_cast<std::int64_t>(t);
        l->slot = s;
        return;
      }
    }
  }

  bool usable_;
  oracle::PagedCacheView view_;
  std::int64_t naive_stride_;
  std::int64_t naive_width_;
  std::vector<std::int64_t> slots_;
  std::set<std::int64_t> addressed_;
  std::map<std::int64_t, std::int64_t> row_of_slot_;  // the first row writing each slot
};

// Appends the runs of bytes that differ between `before` and `after`: the addressed records'
// bytes summed into one write, every other run listed (up to kMaxListedRuns, then summed).
void append_diff(const std::string& buffer, const std::vector<std::uint8_t>& before,
                 const std::vector<std::uint8_t>& after, const Locator& locate, ProbeObservation* o) {
  ProbeWrite inside{buffer, WriteSite::kAddressedRecord, "addressed records", 0, 0, -1, -1};
  std::vector<ProbeWrite> runs;
  const std::size_t n = std::min(before.size(), after.size());
  std::int64_t previous = -2;
  for (std::size_t i = 0; i < n; ++i) {
    if (before[i] == after[i]) continue;
    const std::int64_t at = static_cast<std::int64_t>(i);
    const Locus l = locate(at);
    if (l.site == WriteSite::kAddressedRecord) {
      if (inside.bytes == 0) inside.offset = at;
      ++inside.bytes;
      continue;
    }
    ProbeWrite* last = runs.empty() ? nullptr : &runs.back();
    if (last != nullptr && previous == at - 1 && last->site == l.site && last->what == l.what && last->slot == l.slot) {
      ++last->bytes;
    } else if (runs.size() >= kMaxListedRuns) {
      if (runs.back().what != "more") runs.push_back({buffer, l.site, "more", at, 0, -1, -1});
      ++runs.back().bytes;
    } else {
      runs.push_back({buffer, l.site, l.what, at, 1, l.row, l.slot});
    }
    previous = at;
  }
  if (inside.bytes > 0) o->writes.push_back(inside);
  for (ProbeWrite& w : runs) o->writes.push_back(std::move(w));
}

// Appends the device checks' damage: guard zones and changed inputs as such (the row and slot of
// an output's guard byte when a record would lie there), a rejected call's writes located in
// their output.
void append_damage(const std::vector<BufferDamage>& damage,
                   const std::function<const Locator*(const std::string& buffer)>& locator_of, ProbeObservation* o) {
  for (const BufferDamage& d : damage) {
    ProbeWrite w{d.buffer, WriteSite::kGuardZone, d.region, d.offset, d.bytes, -1, -1};
    const Locator* locate = locator_of(d.buffer);
    if (d.region == kInputChangedRegion) {
      w.site = WriteSite::kInput;
    } else if (d.region == kGuardBeforeRegion || d.region == kGuardAfterRegion) {
      if (locate != nullptr) {
        const Locus l = (*locate)(d.offset);
        w.row = l.row;
        w.slot = l.slot;
      }
    } else if (locate != nullptr) {  // written by a rejected call, in a located output
      const Locus l = (*locate)(d.offset);
      w.site = l.site;
      w.what = d.region + " (" + l.what + ")";
      w.row = l.row;
      w.slot = l.slot;
    } else {  // another output of a rejected call (q_out, a projection): its rows are the call's
      w.site = WriteSite::kAddressedRecord;
    }
    o->writes.push_back(std::move(w));
  }
}

std::vector<std::int64_t> first_n(std::vector<std::int64_t> v, std::int64_t n) {
  if (n >= 0 && static_cast<std::int64_t>(v.size()) > n) v.resize(static_cast<std::size_t>(n));
  return v;
}

}  // namespace

std::string stacked_pool_buffer(int layer, char k_or_v) {
  return "layer " + std::to_string(layer) + " " + std::string(1, k_or_v) + " pool";
}

void observe_insert_call(const InsertCase& c, const std::vector<BufferDamage>& damage,
                         const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>* after,
                         ProbeObservation* o) {
  const auto format = format_of(c);
  // Rows past the slot tensor's length are never written; slots are int64 (a breaker of another
  // dtype reads none).
  const std::vector<std::int64_t> slots =
      c.slots.meta.dtype == DType::kI64 ? readable_indices(c.slots) : std::vector<std::int64_t>{};
  const PagedRecords records(c.cache, format.value_or(RecordFormat::kPacked584), c.kv.meta.dtype,
                             format ? slots : std::vector<std::int64_t>{});
  const Locator cache = [&](std::int64_t offset) {
    if (!format) return Locus{WriteSite::kOutsideRecords, "cache byte (no record format for the cache)", -1, -1};
    return records.locate(offset);
  };
  append_damage(
      damage, [&](const std::string& buffer) { return buffer == kCacheBackingBuffer ? &cache : nullptr; }, o);
  if (after != nullptr) append_diff(kCacheBackingBuffer, before, *after, cache, o);

  const std::int64_t capacity = format ? records.capacity() : -1;
  if (capacity < 0) return;
  const std::vector<std::int64_t> positions =
      first_n(c.positions.meta.dtype == DType::kI64 ? readable_indices(c.positions) : std::vector<std::int64_t>{},
              static_cast<std::int64_t>(slots.size()));
  const std::int64_t max_pos = c.cos_sin.present && c.cos_sin.meta.rank() >= 1 ? c.cos_sin.meta.size(0) : -1;
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const std::int64_t s = slots[t], row = static_cast<std::int64_t>(t);
    const std::int64_t p = t < positions.size() ? positions[t] : 0;
    if (s >= capacity) {
      o->bad_rows.push_back({BadRowKind::kSlotPastCache, "kv_cache", row, s, p, capacity, false});
    } else if (s >= 0 && t < positions.size() && max_pos >= 0 && (p < 0 || p >= max_pos)) {
      const bool written = after != nullptr && records.record_changed(s, before, *after);
      o->bad_rows.push_back({BadRowKind::kPositionOutsideTable, "cos_sin_cache", row, s, p, max_pos, written});
    }
  }
}

void observe_store_call(const StoreCase& c, const std::vector<BufferDamage>& damage,
                        const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>* after,
                        ProbeObservation* o) {
  const bool well_formed = (c.cache.rank() == 2 || c.cache.rank() == 3) &&
                           c.cache.strides.size() == c.cache.sizes.size() && c.cache.dtype == DType::kU8;
  const std::vector<std::int64_t> indices = readable_indices(c.indices);
  const PagedRecords records(store_cache_geometry(c), store_format(c), DType::kBF16,
                             well_formed ? indices : std::vector<std::int64_t>{});
  const Locator cache = [&](std::int64_t offset) {
    if (!well_formed) return Locus{WriteSite::kOutsideRecords, "cache byte (malformed cache metadata)", -1, -1};
    return records.locate(offset);
  };
  append_damage(
      damage, [&](const std::string& buffer) { return buffer == kCacheBackingBuffer ? &cache : nullptr; }, o);
  if (after != nullptr) append_diff(kCacheBackingBuffer, before, *after, cache, o);
  const std::int64_t capacity = well_formed ? records.capacity() : -1;
  if (capacity < 0) return;
  for (std::size_t t = 0; t < indices.size(); ++t)
    if (indices[t] >= capacity)
      o->bad_rows.push_back(
          {BadRowKind::kSlotPastCache, "kv_cache", static_cast<std::int64_t>(t), indices[t], 0, capacity, false});
}

void observe_stacked_call(const StackedCtxKvCase& c, const std::vector<BufferDamage>& damage,
                          const StackedCtxKvOutputs& before, const StackedCtxKvOutputs* after, ProbeObservation* o) {
  const std::vector<std::int64_t> cache_loc =
      c.cache_loc.meta.dtype == DType::kI64 ? readable_indices(c.cache_loc) : std::vector<std::int64_t>{};
  const std::vector<std::int64_t> positions =
      c.positions.meta.dtype == DType::kI64 ? readable_indices(c.positions) : std::vector<std::int64_t>{};
  // A pool [slots, heads, head_dim]: slot s's row is kv_size elements at offset + s * stride(0).
  struct Pool {
    std::string buffer;
    std::int64_t offset = 0, slot_stride = 0, row_bytes = 0, slots = 0;
  };
  const auto pool_of = [](const std::string& buffer, const TensorMeta& m, std::int64_t kv_size) {
    Pool p{buffer};
    if (m.rank() != 3 || m.strides.size() != 3 || dtype_size(m.dtype) == 0) return p;
    p.offset = m.offset_bytes;
    p.slot_stride = m.strides[0] * dtype_size(m.dtype);
    p.row_bytes = kv_size * dtype_size(m.dtype);
    p.slots = m.size(0);
    return p;
  };
  std::vector<std::pair<Pool, Locator>> pools;
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    for (const auto& [which, meta] : {std::make_pair('K', &l.k_pool), std::make_pair('V', &l.v_pool)}) {
      const Pool p = pool_of(stacked_pool_buffer(i, which), *meta, l.kv_size());
      const Locator locate = [p, &cache_loc](std::int64_t offset) {
        Locus at;
        at.what = "pool byte";
        if (p.slot_stride <= 0) return at;
        const std::int64_t rel = offset - p.offset;
        const std::int64_t slot = rel >= 0 ? rel / p.slot_stride : -1 - (-rel - 1) / p.slot_stride;
        const bool in_row = rel - slot * p.slot_stride < p.row_bytes;
        for (std::size_t t = 0; t < cache_loc.size(); ++t)
          if (cache_loc[t] == slot) {
            at.row = static_cast<std::int64_t>(t);
            at.slot = slot;
            break;
          }
        if (slot >= 0 && slot < p.slots && in_row && at.row >= 0) {
          at.site = WriteSite::kAddressedRecord;
          at.what = "pool row";
        } else if (slot >= 0 && slot < p.slots) {
          at.what = in_row ? "foreign slot" : "slot padding";
          at.slot = slot;
        } else {
          at.what = "outside the pool";
        }
        return at;
      };
      pools.emplace_back(p, locate);
    }
  }
  append_damage(
      damage,
      [&](const std::string& buffer) -> const Locator* {
        for (const auto& [pool, locate] : pools)
          if (pool.buffer == buffer) return &locate;
        return nullptr;
      },
      o);
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const std::size_t layer = i / 2;
    const std::vector<std::vector<std::uint8_t>>& b = i % 2 == 0 ? before.k_pools : before.v_pools;
    if (after == nullptr || layer >= b.size()) continue;
    const std::vector<std::vector<std::uint8_t>>& a = i % 2 == 0 ? after->k_pools : after->v_pools;
    if (layer < a.size()) append_diff(pools[i].first.buffer, b[layer], a[layer], pools[i].second, o);
  }
  // Rows past a pool, and positions outside a layer's table whose K row (the rotated one) was written.
  for (std::size_t t = 0; t < cache_loc.size(); ++t) {
    const std::int64_t s = cache_loc[t], row = static_cast<std::int64_t>(t);
    const std::int64_t p = t < positions.size() ? positions[t] : 0;
    for (int i = 0; i < c.num_layers(); ++i) {
      const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
      const Pool& k = pools[static_cast<std::size_t>(2 * i)].first;
      if (k.slot_stride <= 0) continue;
      if (s >= k.slots) {  // once per row: the first pool it runs past
        o->bad_rows.push_back({BadRowKind::kSlotPastCache, k.buffer, row, s, p, k.slots, false});
        break;
      }
      const std::int64_t max_pos = l.cos_sin.present && l.cos_sin.meta.rank() >= 1 ? l.cos_sin.meta.size(0) : -1;
      if (s < 0 || t >= positions.size() || max_pos < 0 || (p >= 0 && p < max_pos)) continue;
      bool written = false;
      const std::size_t layer = static_cast<std::size_t>(i);
      if (after != nullptr && layer < before.k_pools.size() && layer < after->k_pools.size()) {
        const std::vector<std::uint8_t>& b = before.k_pools[layer];
        const std::vector<std::uint8_t>& a = after->k_pools[layer];
        for (std::int64_t j = k.offset + s * k.slot_stride; j < k.offset + s * k.slot_stride + k.row_bytes; ++j)
          if (j >= 0 && j < static_cast<std::int64_t>(std::min(a.size(), b.size())) &&
              a[static_cast<std::size_t>(j)] != b[static_cast<std::size_t>(j)])
            written = true;
      }
      o->bad_rows.push_back(
          {BadRowKind::kPositionOutsideTable, "layer " + std::to_string(i) + " cos_sin", row, s, p, max_pos, written});
    }
  }
}

}  // namespace kvc::testkit
