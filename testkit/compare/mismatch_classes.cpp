// mismatch_classes.cpp: naming what explains each differing record (see mismatch_classes.h).
#include "testkit/compare/mismatch_classes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "kvc/hex_text.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/store_rotated.h"
#include "kvc/oracle/ue8m0.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/byte_class.h"
#include "testkit/compare/out_of_range_rows.h"
#include "testkit/compare/row_variants.h"

namespace kvc::testkit {
namespace {

using Bytes = std::vector<std::uint8_t>;
using Range = std::pair<std::int64_t, std::int64_t>;  // [begin, end) in the backing

// What a differing byte belongs to; one site per (kind, id).
enum class SiteKind : std::uint8_t {
  kRecord,       // an addressed slot's record without its pad byte (id: slot)
  kPad,          // an addressed slot's packed584 pad byte (id: slot)
  kForeignSlot,  // a record the case does not address (id: slot)
  kRowGap,       // the gap after a full-cache row (id: slot)
  kPagePadding,  // id: page
  kBeforeCache,  // id: 0
  kAfterCache,   // id: 0
};

struct SiteTally {
  std::int64_t bytes = 0;
  std::int64_t first_offset = 0;
};

std::string place(const oracle::PagedCacheView& v, std::int64_t slot) {
  return "page " + std::to_string(slot / v.block_size) + " token " + std::to_string(slot % v.block_size);
}

std::string policy_alternative(const kvc::Profile& p, kvc::Policy policy) {
  return std::string(kvc::policy_title(policy)) + " `" +
         std::string(kvc::alternative_name(policy, kvc::alternative_of(p, policy))) + "`";
}

MismatchClass class_of_variant(RowVariant v) {
  switch (v) {
    case RowVariant::kE4m3TiesAway:
    case RowVariant::kBf16TiesAway: return MismatchClass::kRoundingTie;
    case RowVariant::kRopeMulSub:
    case RowVariant::kRopeNeox:
    case RowVariant::kRopeNeoxInLane: return MismatchClass::kRopePattern;
    case RowVariant::kE4m3NoSaturation:
    case RowVariant::kBf16NanPayloadKept: return MismatchClass::kSaturationNan;
    case RowVariant::kFp8ScaleMultiplied:
    case RowVariant::kFp8ScaleDivided: return MismatchClass::kTensorScale;
    case RowVariant::kContract: break;
  }
  return MismatchClass::kUnexplained;
}

// The policies a record of format f can differ by (the pad byte is a site of its own; rsqrt rows
// are checked by approx_rsqrt.h).
std::vector<kvc::Policy> record_policies(RecordFormat f) {
  std::vector<kvc::Policy> v;
  for (kvc::Policy p : kvc::kAllPolicies)
    if (p != kvc::Policy::kRsqrt && p != kvc::Policy::kPadByte && kvc::policy_applies(p, f)) v.push_back(p);
  return v;
}

class Classifier {
 public:
  Classifier(const InsertCase& c, const kvc::Profile& declared, const Bytes& initial, const Bytes& expected,
             const Bytes& actual, const PolicyReport* policy)
      : c_(c),
        declared_(declared),
        initial_(initial),
        expected_(expected),
        actual_(actual),
        view_(view_of(c)),
        layout_(layout_of(view_.format)),
        policy_(policy) {
    for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
      const std::int64_t s = c.slots.load<std::int64_t>(t);
      if (s >= 0) writer_[s] = t;  // the last row to write a slot is the one whose bytes remain
    }
  }

  MismatchClassification run() {
    MismatchClassification out;
    const std::size_t n = std::min({expected_.size(), actual_.size(), initial_.size()});
    std::map<std::pair<SiteKind, std::int64_t>, SiteTally> sites;
    for (std::size_t i = 0; i < n; ++i) {
      if (expected_[i] == actual_[i]) continue;
      ++out.mismatching_bytes;
      const auto key = site_of(static_cast<std::int64_t>(i));
      SiteTally& t = sites[key];
      if (t.bytes++ == 0) t.first_offset = static_cast<std::int64_t>(i);
    }
    // Records first: a pad byte that differs in a record at the wrong address goes with it.
    std::int64_t searched = 0;
    std::map<std::pair<SiteKind, std::int64_t>, ClassifiedSite> classified;
    for (const auto& [key, tally] : sites) {
      if (key.first == SiteKind::kPad) continue;
      ClassifiedSite& site = classified[key];
      site.bytes = tally.bytes;
      site.first_offset = tally.first_offset;
      if (key.first == SiteKind::kRecord && searched++ >= MismatchClassification::kMaxRecordSearch) {
        site.cls = MismatchClass::kUnexplained;
        site.where = where(key);
        site.detail = "not searched: past the first " + std::to_string(MismatchClassification::kMaxRecordSearch) +
                      " differing records";
        ++out.not_searched;
      } else {
        classify(key, &site);
      }
    }
    for (const auto& [key, tally] : sites) {
      if (key.first != SiteKind::kPad) continue;
      const auto record = classified.find({SiteKind::kRecord, key.second});
      if (record != classified.end() && record->second.cls == MismatchClass::kWrongAddress) {
        record->second.bytes += tally.bytes;
        continue;
      }
      ClassifiedSite& site = classified[key];
      site.bytes = tally.bytes;
      site.first_offset = tally.first_offset;
      classify(key, &site);
    }
    for (const auto& [key, site] : classified) out.add(site);
    return out;
  }

 private:
  // A row gap is a site of its own whichever slot it follows (the comparator counts the one after a
  // foreign record as that record's).
  std::pair<SiteKind, std::int64_t> site_of(std::int64_t offset) const {
    const oracle::ByteLocation loc = oracle::locate(view_, offset);
    const ByteClass cls = byte_class(loc.field);
    switch (cls) {
      case ByteClass::kOutsideCache:
        return {offset < view_.base_offset ? SiteKind::kBeforeCache : SiteKind::kAfterCache, 0};
      case ByteClass::kPagePadding: return {SiteKind::kPagePadding, loc.page};
      case ByteClass::kRowGap: return {SiteKind::kRowGap, loc.slot};
      default: break;
    }
    if (!writer_.count(loc.slot)) return {SiteKind::kForeignSlot, loc.slot};
    return {cls == ByteClass::kScalePad ? SiteKind::kPad : SiteKind::kRecord, loc.slot};
  }

  std::string where(const std::pair<SiteKind, std::int64_t>& key) const {
    const std::int64_t id = key.second;
    switch (key.first) {
      case SiteKind::kRecord:
        return "slot " + std::to_string(id) + " (" + place(view_, id) + ", row " + std::to_string(writer_.at(id)) + ")";
      case SiteKind::kPad:
        return std::string(mismatch_class_name(MismatchClass::kPadByte)) + " of slot " + std::to_string(id) + " (" +
               place(view_, id) + ")";
      case SiteKind::kForeignSlot:
        return std::string(name(ByteClass::kForeignSlot)) + " " + std::to_string(id) + " (" + place(view_, id) +
               ", not addressed by the case)";
      case SiteKind::kRowGap:
        return std::string(name(ByteClass::kRowGap)) + " after slot " + std::to_string(id) + " (" + place(view_, id) +
               ")";
      case SiteKind::kPagePadding: return std::string(name(ByteClass::kPagePadding)) + " of page " + std::to_string(id);
      case SiteKind::kBeforeCache: return "before the cache's first page";
      case SiteKind::kAfterCache: return "after the cache's last page (guard zone)";
    }
    return "?";
  }

  // The bytes of a slot's record; without the pad byte unless asked.
  std::vector<Range> record_ranges(std::int64_t slot, bool with_pad = false) const {
    const std::int64_t data = oracle::token_data_offset(view_, slot);
    std::vector<Range> r{{data, data + layout_.data_bytes}};
    if (layout_.paged_regions) {
      const std::int64_t scales = oracle::token_scale_offset(view_, slot);
      r.push_back({scales, scales + (with_pad ? layout_.scale_bytes : layout_.scale_blocks)});
    }
    return r;
  }

  std::vector<Range> site_ranges(const std::pair<SiteKind, std::int64_t>& key) const {
    const std::int64_t id = key.second;
    switch (key.first) {
      case SiteKind::kRecord:
      case SiteKind::kForeignSlot: return record_ranges(id, key.first == SiteKind::kForeignSlot);
      case SiteKind::kPad: {
        const std::int64_t pad = oracle::token_scale_offset(view_, id) + layout_.scale_blocks;
        return {{pad, pad + 1}};
      }
      case SiteKind::kRowGap: {
        const std::int64_t end = oracle::token_data_offset(view_, id) + layout_.data_bytes;
        return {{end, oracle::token_data_offset(view_, id) + view_.token_stride_bytes}};
      }
      case SiteKind::kPagePadding: {
        const std::int64_t page = view_.page_offset(id);
        const std::int64_t dense = layout_.paged_regions ? layout_.dense_page_bytes(view_.block_size)
                                                         : view_.block_size * view_.token_stride_bytes;
        return {{page + dense, page + view_.page_stride_bytes}};
      }
      case SiteKind::kBeforeCache: return {{0, view_.base_offset}};
      case SiteKind::kAfterCache: {
        const std::int64_t end = view_.page_offset(view_.num_blocks);
        return {{end, static_cast<std::int64_t>(actual_.size())}};
      }
    }
    return {};
  }

  // The rows whose out-of-range slot explains the bytes changed in `ranges` outside the cache
  // (out_of_range_rows.h), one line each.
  std::vector<std::string> rows_blamed(const std::vector<Range>& ranges) const {
    std::vector<ByteRange> changed;
    const auto size = static_cast<std::int64_t>(std::min(initial_.size(), actual_.size()));
    for (const Range& r : ranges)
      for (std::int64_t i = std::max<std::int64_t>(r.first, 0); i < std::min(r.second, size); ++i) {
        if (initial_[static_cast<std::size_t>(i)] == actual_[static_cast<std::size_t>(i)]) continue;
        if (!changed.empty() && changed.back().end == i)
          changed.back().end = i + 1;
        else
          changed.push_back({i, i + 1});
      }
    return attribute_out_of_bounds_writes(c_, std::move(changed)).lines();
  }

  static bool equal_on(const Bytes& a, const Bytes& b, const std::vector<Range>& ranges) {
    for (const Range& r : ranges)
      if (!std::equal(a.begin() + r.first, a.begin() + r.second, b.begin() + r.first)) return false;
    return true;
  }

  std::int64_t differing_on(const std::vector<Range>& ranges) const {
    std::int64_t n = 0;
    for (const Range& r : ranges)
      for (std::int64_t i = r.first; i < r.second; ++i)
        n += expected_[static_cast<std::size_t>(i)] != actual_[static_cast<std::size_t>(i)];
    return n;
  }

  // Row `row` re-encoded with `v` under `p` into the scratch copy of the initial backing; true when
  // it reproduces the actual bytes of the slot's record (pad byte apart).
  bool reproduces(std::int64_t row, std::int64_t slot, RowVariant v, const kvc::Profile& p) {
    if (!scratch_) scratch_ = std::make_unique<Bytes>(initial_);
    const std::vector<Range> ranges = record_ranges(slot, true);
    for (const Range& r : ranges)
      std::copy(initial_.begin() + r.first, initial_.begin() + r.second, scratch_->begin() + r.first);
    encode_row_variant(c_, view_, row, v, p, *scratch_);
    return equal_on(*scratch_, actual_, record_ranges(slot));
  }

  // Another addressed slot whose expected record the actual bytes at `slot` equal.
  std::optional<std::int64_t> record_holder(std::int64_t slot, bool with_pad) {
    if (!by_content_) {
      by_content_.emplace();
      for (const auto& [s, row] : writer_) by_content_->emplace(content_hash(expected_, s), s);
    }
    const std::uint64_t h = content_hash(actual_, slot);
    auto [lo, hi] = by_content_->equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      if (it->second == slot) continue;
      bool same = true;
      const std::vector<Range> here = record_ranges(slot, with_pad), there = record_ranges(it->second, with_pad);
      for (std::size_t k = 0; k < here.size() && same; ++k)
        same = std::equal(actual_.begin() + here[k].first, actual_.begin() + here[k].second,
                          expected_.begin() + there[k].first);
      if (same) return it->second;
    }
    return std::nullopt;
  }

  std::uint64_t content_hash(const Bytes& b, std::int64_t slot) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (const Range& r : record_ranges(slot))
      for (std::int64_t i = r.first; i < r.second; ++i) h = (h ^ b[static_cast<std::size_t>(i)]) * 1099511628211ull;
    return h;
  }

  // Stride mistakes: the whole case encoded with the dense page stride (and, for full caches with
  // row gaps, the dense token stride). Built on first use.
  struct AddressModel {
    std::string description;
    Bytes backing;
  };
  const std::vector<AddressModel>& address_models() {
    if (models_) return *models_;
    models_.emplace();
    const std::int64_t element = c_.cache.element_bytes();
    oracle::OracleOptions o;
    o.profile = declared_;
    auto add = [&](InsertCase model, std::string description) {
      AddressModel m{std::move(description), initial_};
      oracle::insert_kv_rows(model, m.backing, o);
      models_->push_back(std::move(m));
    };
    const std::int64_t row_bytes = layout_.record_bytes();
    const std::int64_t dense_page = layout_.paged_regions ? layout_.dense_page_bytes(view_.block_size)
                                                          : view_.block_size * view_.token_stride_bytes;
    if (dense_page < view_.page_stride_bytes && dense_page % element == 0) {
      InsertCase m = c_;
      m.cache.stride0 = dense_page / element;
      add(std::move(m), "a page stride of " + std::to_string(dense_page) + " B (the dense page) instead of " +
                            std::to_string(view_.page_stride_bytes) + " B");
    }
    if (!layout_.paged_regions && row_bytes < view_.token_stride_bytes) {
      InsertCase m = c_;
      m.cache.stride1 = row_bytes / element;
      add(std::move(m), "a token stride of " + std::to_string(row_bytes) + " B (the dense row) instead of " +
                            std::to_string(view_.token_stride_bytes) + " B");
    }
    return *models_;
  }

  std::optional<std::string> address_model_explains(const std::vector<Range>& ranges) {
    for (const AddressModel& m : address_models())
      if (equal_on(m.backing, actual_, ranges)) return "the bytes " + m.description + " puts there";
    return std::nullopt;
  }

  // Every differing block of the record has another scale byte, and its codes are what that
  // scale gives; the rest of the record is the profile's. Packed formats.
  std::optional<std::string> exponent_explains(std::int64_t row, std::int64_t slot, const kvc::Profile& p) {
    if (!layout_.paged_regions) return std::nullopt;
    if (!scratch_) scratch_ = std::make_unique<Bytes>(initial_);
    for (const Range& r : record_ranges(slot, true))
      std::copy(initial_.begin() + r.first, initial_.begin() + r.second, scratch_->begin() + r.first);
    encode_row_variant(c_, view_, row, RowVariant::kContract, p, *scratch_);
    const Bytes& ref = *scratch_;
    std::uint16_t row16[kHeadDim];
    oracle::rotated_row16(c_, row, p, row16);
    const DType dt = c_.kv.meta.dtype;
    const std::int64_t data = oracle::token_data_offset(view_, slot);
    const std::int64_t scales = oracle::token_scale_offset(view_, slot);
    // Bytes outside the blocks (packed584's 16-bit RoPE values) must be the profile's.
    for (int d = layout_.fp8_dims; d < kHeadDim; ++d)
      for (int b = 0; b < 2; ++b) {
        const std::size_t i = static_cast<std::size_t>(data + oracle::dim_offset_in_data(view_.format, d) + b);
        if (ref[i] != actual_[i]) return std::nullopt;
      }
    int moved = 0;
    std::string first;
    for (int k = 0; k < layout_.scale_blocks; ++k) {
      const std::size_t sb = static_cast<std::size_t>(scales + k);
      const int begin = k * layout_.quant_block_dims, end = begin + layout_.quant_block_dims;
      if (ref[sb] == actual_[sb]) {
        for (int d = begin; d < end; ++d) {
          const std::size_t i = static_cast<std::size_t>(data + oracle::dim_offset_in_data(view_.format, d));
          if (ref[i] != actual_[i]) return std::nullopt;
        }
        continue;
      }
      if (actual_[sb] == kUe8m0Nan) return std::nullopt;
      const float inverse = oracle::inverse_scale(static_cast<float>(static_cast<int>(actual_[sb]) - kUe8m0Bias));
      float values[kHeadDim];
      for (int d = begin; d < end; ++d) {
        values[d - begin] = oracle::widen16(row16[d], dt);
        const std::size_t i = static_cast<std::size_t>(data + oracle::dim_offset_in_data(view_.format, d));
        if (oracle::e4m3_encode(values[d - begin] * inverse, p.clamp_order) != actual_[i]) return std::nullopt;
      }
      if (moved++ == 0) {
        const oracle::BlockScale bs = oracle::block_scale(values, layout_.quant_block_dims, oracle::scale_rules_of(p));
        const float q =
            p.amax_floor == kvc::AmaxFloor::kBeforeDivide ? bs.amax / kFp8Max : std::max(bs.amax / kFp8Max, kAmaxFloor);
        const int e_actual = static_cast<int>(actual_[sb]) - kUe8m0Bias,
                  e_expected = static_cast<int>(ref[sb]) - kUe8m0Bias;
        char text[256];
        std::snprintf(text, sizeof text,
                      "block %d: scale byte %s (E = %d) instead of %s (E = %d), codes quantized with it; q = %.9g: "
                      "log2f rule E = %g, exact rule E = %g",
                      k, hex(actual_[sb], 2).c_str(), e_actual, hex(ref[sb], 2).c_str(), e_expected,
                      static_cast<double>(q),
                      static_cast<double>(oracle::scale_exponent(q, kvc::ExponentRule::kDeviceLog2f)),
                      static_cast<double>(oracle::scale_exponent(q, kvc::ExponentRule::kExact)));
        first = text;
      }
    }
    if (moved == 0) return std::nullopt;
    return "another exponent: " + std::to_string(moved) + " block" + (moved > 1 ? "s" : "") + "; " + first;
  }

  void classify_record(std::int64_t slot, ClassifiedSite* site) {
    const std::int64_t row = writer_.at(slot);
    const std::vector<Range> ranges = record_ranges(slot);
    site->cls = MismatchClass::kWrongAddress;
    if (equal_on(actual_, initial_, ranges)) {
      site->detail = "record not written: its bytes are those before the call";
      return;
    }
    if (const auto holder = record_holder(slot, false)) {
      site->detail =
          "holds the record of slot " + std::to_string(*holder) + " (row " + std::to_string(writer_.at(*holder)) + ")";
      return;
    }
    // One policy of the declared profile flipped.
    for (kvc::Policy policy : record_policies(view_.format)) {
      const kvc::Profile p = kvc::with_alternative(declared_, policy, 1 - kvc::alternative_of(declared_, policy));
      if (!reproduces(row, slot, RowVariant::kContract, p)) continue;
      site->cls = class_of_policy(policy);
      site->detail = "the oracle's record with " + policy_alternative(p, policy) + " (declared " +
                     policy_alternative(declared_, policy) + ")";
      return;
    }
    // One numeric variant.
    for (RowVariant v : kNumericVariants) {
      if (!variant_applies(v, c_, declared_) || !reproduces(row, slot, v, declared_)) continue;
      site->cls = class_of_variant(v);
      site->detail = "reproduced by: " + std::string(describe_variant(v));
      return;
    }
    // The profile checker's closest profile, with every policy it needs named; then a variant on it.
    const kvc::Profile* followed = policy_ && policy_->followed ? &*policy_->followed : nullptr;
    if (followed && *followed != declared_) {
      std::vector<RowVariant> variants{RowVariant::kContract};
      variants.insert(variants.end(), kNumericVariants.begin(), kNumericVariants.end());
      for (RowVariant v : variants) {
        if (!variant_applies(v, c_, *followed) || !reproduces(row, slot, v, *followed)) continue;
        std::vector<kvc::Policy> needed;
        for (kvc::Policy policy : record_policies(view_.format)) {
          if (kvc::alternative_of(*followed, policy) == kvc::alternative_of(declared_, policy)) continue;
          const kvc::Profile without = kvc::with_alternative(*followed, policy, kvc::alternative_of(declared_, policy));
          if (!reproduces(row, slot, v, without)) needed.push_back(policy);
        }
        std::string names;
        for (kvc::Policy policy : needed)
          names += (names.empty() ? "" : " and ") + policy_alternative(*followed, policy);
        site->cls = v != RowVariant::kContract ? class_of_variant(v)
                    : needed.empty()           ? MismatchClass::kUnexplained
                                               : class_of_policy(needed.front());
        site->detail = "profile `" + kvc::profile_name(*followed) + "`" + (names.empty() ? "" : ": " + names) +
                       (v != RowVariant::kContract ? "; " + std::string(describe_variant(v)) : "");
        if (site->cls != MismatchClass::kUnexplained) return;
      }
    }
    if (auto e = exponent_explains(row, slot, followed ? *followed : declared_)) {
      site->cls = MismatchClass::kScaleExponent;
      site->detail = *e;
      return;
    }
    if (auto m = address_model_explains(ranges)) {
      site->cls = MismatchClass::kWrongAddress;
      site->detail = *m;
      return;
    }
    site->cls = MismatchClass::kUnexplained;
    site->detail = unexplained_detail(ranges);
  }

  std::string unexplained_detail(const std::vector<Range>& ranges) const {
    std::map<ByteClass, int> fields;  // in the order of their names
    std::optional<std::int64_t> first;
    for (const Range& r : ranges)
      for (std::int64_t i = r.first; i < r.second; ++i) {
        if (expected_[static_cast<std::size_t>(i)] == actual_[static_cast<std::size_t>(i)]) continue;
        if (!first) first = i;
        ++fields[byte_class(oracle::locate(view_, i).field)];
      }
    std::string s = "no known difference reproduces it:";
    for (const auto& [f, n] : fields) s += " " + std::to_string(n) + " " + std::string(name(f)) + ",";
    if (first) {
      const oracle::ByteLocation loc = oracle::locate(view_, *first);
      const float scale = c_.fp8_scale.present ? c_.fp8_scale.load<float>(0) : 1.0f;
      s += " first at offset " + std::to_string(*first) +
           (loc.dim >= 0 ? " (dim " + std::to_string(loc.dim) + ")" : "") + ": expected " +
           oracle::describe_field(expected_, view_, loc, scale) + ", actual " +
           oracle::describe_field(actual_, view_, loc, scale);
    }
    return s;
  }

  void classify(const std::pair<SiteKind, std::int64_t>& key, ClassifiedSite* site) {
    site->where = where(key);
    const std::int64_t id = key.second;
    switch (key.first) {
      case SiteKind::kRecord: classify_record(id, site); return;
      case SiteKind::kPad: {
        const std::size_t i = static_cast<std::size_t>(site->first_offset);
        // Bytes a stride mistake wrote over the pad byte (a pad byte left as it was is a pad
        // policy, whatever a model leaves there).
        if (actual_[i] != initial_[i]) {
          if (auto m = address_model_explains(site_ranges(key))) {
            site->cls = MismatchClass::kWrongAddress;
            site->detail = *m;
            return;
          }
        }
        site->cls = MismatchClass::kPadByte;
        if (actual_[i] == initial_[i])
          site->detail = "not written (kept " + hex(initial_[i], 2) + "): pad policy `" +
                         std::string(kvc::alternative_name(kvc::Policy::kPadByte, 1)) + "`; declared profile `" +
                         kvc::profile_name(declared_) + "` writes " + hex(expected_[i], 2);
        else if (expected_[i] == initial_[i])
          site->detail = "written " + hex(actual_[i], 2) + ", but the declared profile `" +
                         kvc::profile_name(declared_) + "` leaves it (" + hex(initial_[i], 2) + ")";
        else
          site->detail = "written " + hex(actual_[i], 2) + " instead of " + hex(expected_[i], 2);
        return;
      }
      case SiteKind::kBeforeCache:
      case SiteKind::kAfterCache:
        site->cls = MismatchClass::kUntouchedRegion;
        site->detail = std::to_string(site->bytes) + " bytes changed outside the cache view, first at offset " +
                       std::to_string(site->first_offset) + " (" +
                       hex(initial_[static_cast<std::size_t>(site->first_offset)], 2) + " -> " +
                       hex(actual_[static_cast<std::size_t>(site->first_offset)], 2) + ")";
        for (const std::string& line : rows_blamed(site_ranges(key))) site->detail += "; " + line;
        return;
      case SiteKind::kForeignSlot:
      case SiteKind::kRowGap:
      case SiteKind::kPagePadding: break;
    }
    site->cls = MismatchClass::kWrongAddress;
    if (key.first == SiteKind::kForeignSlot) {
      if (const auto holder = record_holder(id, false)) {
        site->detail = "holds the record of slot " + std::to_string(*holder) + " (row " +
                       std::to_string(writer_.at(*holder)) + ")";
        return;
      }
    }
    if (auto m = address_model_explains(site_ranges(key))) {
      site->detail = *m;
      return;
    }
    const std::size_t i = static_cast<std::size_t>(site->first_offset);
    site->detail = std::to_string(site->bytes) + " bytes written where the case writes nothing, first at offset " +
                   std::to_string(site->first_offset) + " (" + hex(initial_[i], 2) + " -> " + hex(actual_[i], 2) + ")";
  }

  const InsertCase& c_;
  const kvc::Profile& declared_;
  const Bytes& initial_;
  const Bytes& expected_;
  const Bytes& actual_;
  const oracle::PagedCacheView view_;
  const RecordLayout& layout_;
  const PolicyReport* policy_;
  std::unordered_map<std::int64_t, std::int64_t> writer_;  // addressed slot -> last row writing it
  std::unique_ptr<Bytes> scratch_;
  std::optional<std::unordered_multimap<std::uint64_t, std::int64_t>> by_content_;
  std::optional<std::vector<AddressModel>> models_;
};

}  // namespace

std::string_view mismatch_class_name(MismatchClass c) {
  switch (c) {
    case MismatchClass::kRoundingTie: return "rounding tie";
    case MismatchClass::kScaleExponent: return "scale exponent";
    case MismatchClass::kSaturationNan: return "saturation / NaN policy";
    case MismatchClass::kRopePattern: return "RoPE pattern";
    case MismatchClass::kWrongAddress: return "wrong address";
    case MismatchClass::kPadByte: return "pad byte";
    case MismatchClass::kUntouchedRegion: return "untouched-region damage";
    case MismatchClass::kUnexplained: return "unexplained";
    case MismatchClass::kTensorScale: return "per-tensor scale";
  }
  return "?";
}

std::string_view mismatch_class_key(MismatchClass c) {
  switch (c) {
    case MismatchClass::kRoundingTie: return "rounding_tie";
    case MismatchClass::kScaleExponent: return "scale_exponent";
    case MismatchClass::kSaturationNan: return "saturation_nan";
    case MismatchClass::kRopePattern: return "rope_pattern";
    case MismatchClass::kWrongAddress: return "wrong_address";
    case MismatchClass::kPadByte: return "pad_byte";
    case MismatchClass::kUntouchedRegion: return "untouched_region";
    case MismatchClass::kUnexplained: return "unexplained";
    case MismatchClass::kTensorScale: return "tensor_scale";
  }
  return "?";
}

MismatchClass class_of_policy(kvc::Policy p) {
  switch (p) {
    case kvc::Policy::kRope: return MismatchClass::kRopePattern;
    case kvc::Policy::kClampOrder:
    case kvc::Policy::kInfBlock: return MismatchClass::kSaturationNan;
    case kvc::Policy::kPadByte: return MismatchClass::kPadByte;
    case kvc::Policy::kExponent:
    case kvc::Policy::kFloorPlacement: return MismatchClass::kScaleExponent;
    case kvc::Policy::kRsqrt: break;
  }
  return MismatchClass::kUnexplained;
}

void MismatchClassification::add(const ClassifiedSite& site) {
  ++sites[site.cls];
  bytes[site.cls] += site.bytes;
  std::vector<ClassifiedSite>& v = shown[site.cls];
  if (v.size() < kShownPerClass) v.push_back(site);
}

std::int64_t MismatchClassification::total_sites() const {
  std::int64_t n = 0;
  for (const auto& [cls, count] : sites) n += count;
  return n;
}

std::int64_t MismatchClassification::count(MismatchClass c) const {
  const auto it = sites.find(c);
  return it == sites.end() ? 0 : it->second;
}

std::string MismatchClassification::summary_line() const {
  std::string s;
  for (MismatchClass c : kAllMismatchClasses)
    if (count(c) > 0)
      s += (s.empty() ? "" : ", ") + std::string(mismatch_class_name(c)) + " " + std::to_string(count(c));
  return s.empty() ? "none" : s;
}

std::string MismatchClassification::report() const {
  std::ostringstream s;
  s << "  mismatch classes (" << total_sites() << (total_sites() == 1 ? " site, " : " sites, ") << mismatching_bytes
    << " bytes): " << summary_line() << "\n";
  for (MismatchClass c : kAllMismatchClasses) {
    if (count(c) == 0) continue;
    s << "  " << mismatch_class_name(c) << ": " << count(c) << " site" << (count(c) > 1 ? "s" : "") << ", "
      << bytes.at(c) << " bytes\n";
    for (const ClassifiedSite& site : shown.at(c)) s << "    " << site.where << ": " << site.detail << "\n";
    if (count(c) > static_cast<std::int64_t>(shown.at(c).size())) s << "    ...\n";
  }
  if (not_searched > 0) s << "  " << not_searched << " records were not searched (counted as unexplained)\n";
  return s.str();
}

nlohmann::json MismatchClassification::to_json() const {
  nlohmann::json j;
  j["mismatching_bytes"] = mismatching_bytes;
  j["sites"] = nlohmann::json::object();
  j["bytes"] = nlohmann::json::object();
  j["examples"] = nlohmann::json::object();
  for (MismatchClass c : kAllMismatchClasses) {
    if (count(c) == 0) continue;
    const std::string key(mismatch_class_key(c));
    j["sites"][key] = count(c);
    j["bytes"][key] = bytes.at(c);
    for (const ClassifiedSite& site : shown.at(c))
      j["examples"][key].push_back(
          {{"where", site.where}, {"detail", site.detail}, {"bytes", site.bytes}, {"first_offset", site.first_offset}});
  }
  j["not_searched"] = not_searched;
  return j;
}

void MismatchClassification::merge(const MismatchClassification& other) {
  mismatching_bytes += other.mismatching_bytes;
  not_searched += other.not_searched;
  for (const auto& [c, n] : other.sites) sites[c] += n;
  for (const auto& [c, n] : other.bytes) bytes[c] += n;
  for (const auto& [c, v] : other.shown)
    for (const ClassifiedSite& site : v)
      if (shown[c].size() < kShownPerClass) shown[c].push_back(site);
}

MismatchClassification classify_insert_mismatches(const InsertCase& c, const kvc::Profile& declared,
                                                  const std::vector<std::uint8_t>& initial,
                                                  const std::vector<std::uint8_t>& expected,
                                                  const std::vector<std::uint8_t>& actual, const PolicyReport* policy) {
  std::optional<PolicyReport> computed;
  if (!policy) {
    computed = check_insert_under_profile(c, declared, initial, expected, actual, "actual");
    policy = &*computed;
  }
  return Classifier(c, declared, initial, expected, actual, policy).run();
}

}  // namespace kvc::testkit
