// policy_report.cpp: the profile-aware checker (see policy_report.h).
#include "testkit/compare/policy_report.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/backends/backing.h"

namespace kvc::testkit {
namespace {

using Range = std::pair<std::int64_t, std::int64_t>;  // [begin, end) in the backing

// What the checker needs of an op: the cache view, the slot of every row the op processes, and
// how to encode one row under given options (the whole case is the caller's oracle run).
struct RowEncoder {
  oracle::PagedCacheView view;
  std::vector<std::int64_t> row_slots;
  std::function<void(std::int64_t row, const oracle::OracleOptions& o, std::vector<std::uint8_t>& backing)> encode;
};

oracle::OracleOptions options_for(const kvc::Profile& p) {
  oracle::OracleOptions o;
  o.profile = p;
  return o;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The bytes a record at (page, token) occupies: packed data and scales, or the full-cache row.
// Nothing when the address computation leaves int64.
std::optional<std::vector<Range>> footprint(const oracle::PagedCacheView& v, std::int64_t page, std::int64_t token) {
  const RecordLayout& l = v.layout();
  const CheckedI64 page_start = checked_mul_add(page, v.page_stride_bytes, v.base_offset);
  if (!page_start) return std::nullopt;
  if (l.paged_regions) {
    const CheckedI64 data = checked_mul_add(token, std::int64_t{l.data_bytes}, page_start);
    const CheckedI64 scales = checked_add(checked_mul(v.block_size, std::int64_t{l.data_bytes}),
                                          checked_mul_add(token, std::int64_t{l.scale_bytes}, page_start));
    if (!data || !scales || !checked_add(*data, l.data_bytes) || !checked_add(*scales, l.scale_bytes))
      return std::nullopt;
    return std::vector<Range>{{*data, *data + l.data_bytes}, {*scales, *scales + l.scale_bytes}};
  }
  const CheckedI64 row = checked_mul_add(token, v.token_stride_bytes, page_start);
  if (!row || !checked_add(*row, l.data_bytes)) return std::nullopt;
  return std::vector<Range>{{*row, *row + l.data_bytes}};
}

std::vector<Range> slot_ranges(const oracle::PagedCacheView& v, std::int64_t slot) {
  return footprint(v, slot / v.block_size, slot % v.block_size).value_or(std::vector<Range>{});
}

// "854 fp8 codes follow ...": a count of bytes of a record byte class.
std::string plural(ByteClass c) {
  if (c == ByteClass::kFp8Code) return "fp8 codes";
  return std::string(name(c)) + " bytes";
}

// The policies that may explain differing bytes of this format (rsqrt is checked row by row
// instead: approx_rsqrt.h).
std::vector<kvc::Policy> searchable_policies(RecordFormat f) {
  std::vector<kvc::Policy> v;
  for (kvc::Policy p : kvc::kAllPolicies)
    if (p != kvc::Policy::kRsqrt && kvc::policy_applies(p, f)) v.push_back(p);
  return v;
}

kvc::Profile flipped(kvc::Profile p, const std::vector<kvc::Policy>& policies, unsigned mask) {
  for (std::size_t i = 0; i < policies.size(); ++i)
    if (mask & (1u << i)) p = kvc::with_alternative(p, policies[i], 1 - kvc::alternative_of(p, policies[i]));
  return p;
}

int popcount(unsigned m) { return __builtin_popcount(m); }

// Re-encodes a set of rows into one scratch copy of the initial backing, restoring their records
// to the initial bytes first (so a policy that leaves a byte unwritten leaves the initial byte).
class Reencoder {
 public:
  Reencoder(const RowEncoder& enc, const std::vector<std::uint8_t>& initial) : enc_(enc), initial_(initial) {
    scratch_ = initial;
  }
  void encode(const std::vector<std::int64_t>& rows, const std::vector<Range>& ranges, const kvc::Profile& p) {
    for (const Range& r : ranges)
      std::copy(initial_.begin() + r.first, initial_.begin() + r.second, scratch_.begin() + r.first);
    const oracle::OracleOptions o = options_for(p);
    for (std::int64_t row : rows) enc_.encode(row, o, scratch_);
  }
  std::int64_t mismatches(const std::vector<Range>& ranges, const std::vector<std::uint8_t>& actual) const {
    std::int64_t n = 0;
    for (const Range& r : ranges)
      for (std::int64_t i = r.first; i < r.second; ++i)
        n += scratch_[static_cast<std::size_t>(i)] != actual[static_cast<std::size_t>(i)];
    return n;
  }
  const std::vector<std::uint8_t>& bytes() const { return scratch_; }

 private:
  const RowEncoder& enc_;
  const std::vector<std::uint8_t>& initial_;
  std::vector<std::uint8_t> scratch_;
};

// Rows (in order) that write any of `slots`, and those slots' record bytes.
void rows_and_ranges(const RowEncoder& enc, const std::set<std::int64_t>& slots, std::vector<std::int64_t>* rows,
                     std::vector<Range>* ranges) {
  for (std::size_t t = 0; t < enc.row_slots.size(); ++t)
    if (slots.count(enc.row_slots[t])) rows->push_back(static_cast<std::int64_t>(t));
  for (std::int64_t s : slots)
    for (const Range& r : slot_ranges(enc.view, s)) ranges->push_back(r);
}

std::string describe_place(const oracle::PagedCacheView& v, const std::set<std::int64_t>& addressed, std::int64_t page,
                           std::int64_t token) {
  if (page < 0) return "before the cache (page " + std::to_string(page) + ")";
  if (page >= v.num_blocks) return "past the cache (page " + std::to_string(page) + ")";
  const std::int64_t slot = page * v.block_size + token;
  const std::string at = " (page " + std::to_string(page) + " token " + std::to_string(token) + ")";
  if (token < 0 || token >= v.block_size)
    return "inside the cache, token " + std::to_string(token) + " of page " + std::to_string(page);
  return (addressed.count(slot) ? "slot " + std::to_string(slot) + ", addressed by another row,"
                                : "foreign slot " + std::to_string(slot)) +
         at;
}

std::string join_policies(const std::vector<kvc::Policy>& ps, const kvc::Profile& followed, bool any_one) {
  std::string s;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (i) s += i + 1 == ps.size() ? (any_one ? " or " : " and ") : ", ";
    s += std::string(kvc::policy_title(ps[i])) + " `" +
         std::string(kvc::alternative_name(ps[i], kvc::alternative_of(followed, ps[i]))) + "`";
  }
  return s;
}

// The differing bytes of a backing against the oracle's, split: bytes of records the case
// addresses (which a profile may explain), and every other byte (an address error).
struct SplitDiff {
  std::set<std::int64_t> addressed;           // slots the rows address
  std::vector<std::int64_t> record_offsets;   // ascending
  std::vector<std::int64_t> address_offsets;  // ascending
  std::set<std::int64_t> differing_slots;     // addressed slots with a differing record byte
};

SplitDiff split_diff(const RowEncoder& enc, const std::vector<std::uint8_t>& expected,
                     const std::vector<std::uint8_t>& actual, PolicyReport& r) {
  SplitDiff d;
  for (std::int64_t s : enc.row_slots)
    if (s >= 0) d.addressed.insert(s);
  const std::size_t n = std::min(expected.size(), actual.size());
  r.compared_bytes = static_cast<std::int64_t>(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (expected[i] == actual[i]) continue;
    ++r.mismatching_bytes;
    const oracle::ByteLocation loc = oracle::locate(enc.view, static_cast<std::int64_t>(i));
    if (is_record_byte(byte_class(loc, d.addressed))) {
      d.record_offsets.push_back(static_cast<std::int64_t>(i));
      d.differing_slots.insert(loc.slot);
    } else {
      d.address_offsets.push_back(static_cast<std::int64_t>(i));
    }
  }
  r.record_bytes = static_cast<std::int64_t>(d.record_offsets.size());
  r.address_error_bytes = static_cast<std::int64_t>(d.address_offsets.size());
  return d;
}

// The rows writing the differing slots (all of them, and the first kSearchRows slots' sample),
// with their record bytes, and the scratch backing they are re-encoded into.
struct PolicySearch {
  const RowEncoder& enc;
  const std::vector<std::uint8_t>& actual;
  Reencoder re;
  std::vector<std::int64_t> sample_rows, all_rows;
  std::vector<Range> sample_ranges, all_ranges;

  PolicySearch(const RowEncoder& e, const std::vector<std::uint8_t>& initial, const std::vector<std::uint8_t>& a,
               const std::set<std::int64_t>& differing_slots)
      : enc(e), actual(a), re(e, initial) {
    std::set<std::int64_t> sample_slots;
    for (std::int64_t s : differing_slots) {
      if (static_cast<std::int64_t>(sample_slots.size()) >= kSearchRows) break;
      sample_slots.insert(s);
    }
    rows_and_ranges(enc, sample_slots, &sample_rows, &sample_ranges);
    rows_and_ranges(enc, differing_slots, &all_rows, &all_ranges);
  }

  // Which bytes at `offsets` the rows reproduce under profile p.
  std::vector<bool> reproduced(const kvc::Profile& p, const std::vector<std::int64_t>& offsets) {
    re.encode(all_rows, all_ranges, p);
    std::vector<bool> v(offsets.size());
    for (std::size_t j = 0; j < offsets.size(); ++j)
      v[j] = re.bytes()[static_cast<std::size_t>(offsets[j])] == actual[static_cast<std::size_t>(offsets[j])];
    return v;
  }
};

// The combination of flipped policies whose sample encoding leaves the fewest differing bytes
// (the fewest policies on a tie).
unsigned best_combination(PolicySearch& search, const kvc::Profile& declared,
                          const std::vector<kvc::Policy>& policies) {
  unsigned best_mask = 0;
  std::int64_t best_count = -1;
  for (unsigned mask = 0; mask < (1u << policies.size()); ++mask) {
    search.re.encode(search.sample_rows, search.sample_ranges, flipped(declared, policies, mask));
    const std::int64_t count = search.re.mismatches(search.sample_ranges, search.actual);
    if (best_count < 0 || count < best_count || (count == best_count && popcount(mask) < popcount(best_mask))) {
      best_mask = mask;
      best_count = count;
    }
  }
  return best_mask;
}

// The explained record bytes grouped by field and by the followed policies they need (or, for a
// byte that needs none alone, those that reproduce it alone), largest group first.
std::vector<PolicyGroup> group_policy_bytes(PolicySearch& search, const std::vector<std::int64_t>& record_offsets,
                                            const std::vector<bool>& explained, const kvc::Profile& declared,
                                            const kvc::Profile& best, const std::vector<kvc::Policy>& followed) {
  // Per followed policy: the bytes that break when it alone is reverted, and those it reproduces
  // alone (a byte that needs none of them alone is reproduced by either of two or more).
  std::vector<std::vector<bool>> needs, alone;
  for (kvc::Policy p : followed) {
    std::vector<bool> kept =
        search.reproduced(kvc::with_alternative(best, p, kvc::alternative_of(declared, p)), record_offsets);
    kept.flip();
    needs.push_back(std::move(kept));
  }
  for (kvc::Policy p : followed)
    alone.push_back(
        search.reproduced(kvc::with_alternative(declared, p, kvc::alternative_of(best, p)), record_offsets));
  std::map<std::tuple<ByteClass, bool, std::vector<int>>, std::int64_t> grouped;
  for (std::size_t j = 0; j < record_offsets.size(); ++j) {
    if (!explained[j]) continue;
    std::vector<int> set;
    for (std::size_t k = 0; k < followed.size(); ++k)
      if (needs[k][j]) set.push_back(static_cast<int>(followed[k]));
    const bool any_one = set.empty();
    if (any_one) {
      for (std::size_t k = 0; k < followed.size(); ++k)
        if (alone[k][j]) set.push_back(static_cast<int>(followed[k]));
      if (set.empty())  // only some combination of them: credit them all
        for (kvc::Policy p : followed) set.push_back(static_cast<int>(p));
    }
    const ByteClass field = byte_class(oracle::locate(search.enc.view, record_offsets[j]).field);
    ++grouped[{field, any_one && set.size() > 1, set}];
  }
  std::vector<PolicyGroup> groups;
  for (const auto& [key, bytes] : grouped) {
    PolicyGroup g;
    g.field = std::get<0>(key);
    g.any_one = std::get<1>(key);
    for (int p : std::get<2>(key)) g.policies.push_back(static_cast<kvc::Policy>(p));
    g.bytes = bytes;
    groups.push_back(g);
  }
  std::sort(groups.begin(), groups.end(), [](const PolicyGroup& a, const PolicyGroup& b) { return a.bytes > b.bytes; });
  return groups;
}

// Which combination of other alternatives reproduces the differing records best, and the groups
// of bytes it explains.
void explain_record_bytes(const RowEncoder& enc, const kvc::Profile& declared, const std::vector<std::uint8_t>& initial,
                          const std::vector<std::uint8_t>& actual, const SplitDiff& d, PolicyReport& r) {
  const std::vector<kvc::Policy> policies = searchable_policies(enc.view.format);
  PolicySearch search(enc, initial, actual, d.differing_slots);
  const unsigned best_mask = best_combination(search, declared, policies);
  const kvc::Profile best = flipped(declared, policies, best_mask);
  const std::vector<bool> explained = search.reproduced(best, d.record_offsets);
  r.unexplained_bytes = search.re.mismatches(search.all_ranges, actual);
  std::vector<kvc::Policy> followed;
  for (std::size_t i = 0; i < policies.size(); ++i)
    if (best_mask & (1u << i)) followed.push_back(policies[i]);
  r.groups = group_policy_bytes(search, d.record_offsets, explained, declared, best, followed);
  if (best_mask != 0) r.followed = best;
}

// Address-error bytes inside the footprint of some culprit's record.
std::int64_t attributed_bytes(const oracle::PagedCacheView& view, const std::vector<AddressCulprit>& culprits,
                              const std::vector<std::int64_t>& address_offsets) {
  std::vector<bool> covered(address_offsets.size());
  for (const AddressCulprit& c : culprits) {
    const auto ranges = footprint(view, c.page, c.token);
    if (!ranges) continue;
    for (const Range& rg : *ranges) {
      auto lo = std::lower_bound(address_offsets.begin(), address_offsets.end(), rg.first);
      auto hi = std::lower_bound(address_offsets.begin(), address_offsets.end(), rg.second);
      for (auto it = lo; it != hi; ++it) covered[static_cast<std::size_t>(it - address_offsets.begin())] = true;
    }
  }
  return std::count(covered.begin(), covered.end(), true);
}

// The checker's text: counts, the policy groups, the closest profile, the address errors and
// their culprits, then the comparator's byte report.
std::string report_text(const PolicyReport& r, const RowEncoder& enc, const std::vector<std::uint8_t>& expected,
                        const std::vector<std::uint8_t>& actual, const std::set<std::int64_t>& addressed,
                        const std::string& actual_name, float fp8_scale) {
  const std::string declared_name = kvc::profile_name(r.declared);
  std::ostringstream s;
  s << actual_name << " vs the oracle under its declared profile `" << declared_name
    << "`: " << layout_of(enc.view.format).name << ", " << enc.view.num_blocks << " pages x " << enc.view.block_size
    << " tokens, page stride " << enc.view.page_stride_bytes << " B, " << enc.row_slots.size() << " rows\n";
  if (r.equal()) {
    s << "  every byte equal (" << r.compared_bytes << " compared)\n";
    return s.str();
  }
  s << "  " << r.mismatching_bytes << " mismatching bytes: " << r.record_bytes << " in addressed records, "
    << r.address_error_bytes << " outside them\n";
  for (const PolicyGroup& g : r.groups)
    s << "  " << g.bytes << " " << plural(g.field) << " follow " << join_policies(g.policies, *r.followed, g.any_one)
      << (g.any_one ? " (each alone reproduces them)" : "") << "; declared profile `" << declared_name << "`\n";
  if (r.followed) {
    if (r.unexplained_bytes == 0)
      s << "  every addressed record matches profile `" << kvc::profile_name(*r.followed) << "`\n";
    else
      s << "  closest profile `" << kvc::profile_name(*r.followed) << "`: " << r.unexplained_bytes
        << " record bytes still differ under it\n";
  } else if (r.record_bytes > 0) {
    s << "  no profile reproduces the " << r.unexplained_bytes << " differing record bytes\n";
  }
  if (r.address_error_bytes > 0) {
    s << "  ADDRESS ERRORS (never excused by a profile, docs/contract.md §6.3): " << r.address_error_bytes
      << " bytes outside the addressed records\n";
    for (const AddressCulprit& c : r.culprits)
      s << "    row " << c.row << " (slot " << c.slot << ") addressed by " << c.arithmetic << " as page " << c.page
        << " token " << c.token << ": " << c.bytes << " bytes " << c.where << "\n";
    if (r.unattributed_address_bytes > 0)
      s << "    " << r.unattributed_address_bytes << " bytes no row's slot explains\n";
  }
  ReportContext ctx;
  ctx.expected_name = "oracle[" + declared_name + "]";
  ctx.actual_name = actual_name;
  ctx.fp8_scale = fp8_scale;
  s << format_report(diff_backings(expected, actual, enc.view, addressed), expected, actual, enc.view, ctx);
  return s.str();
}

PolicyReport explain(const RowEncoder& enc, const kvc::Profile& declared, const std::vector<std::uint8_t>& initial,
                     const std::vector<std::uint8_t>& expected, const std::vector<std::uint8_t>& actual,
                     const std::string& actual_name, float fp8_scale) {
  PolicyReport r;
  r.declared = declared;
  const SplitDiff d = split_diff(enc, expected, actual, r);
  if (!d.record_offsets.empty()) explain_record_bytes(enc, declared, initial, actual, d, r);
  r.culprits = address_culprits(enc.view, enc.row_slots, d.address_offsets);
  r.unattributed_address_bytes = r.address_error_bytes - attributed_bytes(enc.view, r.culprits, d.address_offsets);
  r.text = report_text(r, enc, expected, actual, d.addressed, actual_name, fp8_scale);
  return r;
}

RowEncoder insert_encoder(const InsertCase& c) {
  RowEncoder e;
  e.view = view_of(c);
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) e.row_slots.push_back(c.slots.load<std::int64_t>(t));
  e.encode = [&c, view = e.view](std::int64_t row, const oracle::OracleOptions& o, std::vector<std::uint8_t>& b) {
    oracle::insert_kv_row(c, view, row, b, o);
  };
  return e;
}

RowEncoder store_encoder(const StoreCase& c) {
  RowEncoder e;
  e.view = oracle::store_view(c);
  for (std::int64_t t = 0; t < c.num_rows(); ++t) e.row_slots.push_back(c.index(t));
  e.encode = [&c, view = e.view](std::int64_t row, const oracle::OracleOptions& o, std::vector<std::uint8_t>& b) {
    std::uint16_t r16[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) r16[d] = c.rows.load<std::uint16_t>(row * kHeadDim + d);
    oracle::store_rotated_row(r16, DType::kBF16, view, c.index(row), b, o);
  };
  return e;
}

// A known mistake of the address arithmetic: where it puts a slot's record.
struct AddressModel {
  const char* name;
  std::function<std::pair<std::int64_t, std::int64_t>(std::int64_t)> place;  // slot -> (page, token)
};

std::vector<AddressModel> address_models(std::int64_t bs) {
  return {
      {"floor division (the slot is not skipped)",
       [bs](std::int64_t s) {
         const std::int64_t p = floor_div(s, bs);
         return std::make_pair(p, s - p * bs);
       }},
      {"truncating division (the slot is not skipped)",
       [bs](std::int64_t s) { return std::make_pair(s / bs, s % bs); }},
      {"floor division with the page truncated to 32 bits",
       [bs](std::int64_t s) {
         const std::int64_t p = floor_div(s, bs);
         return std::make_pair(static_cast<std::int64_t>(static_cast<std::int32_t>(p)), s - p * bs);
       }},
      {"the slot truncated to 32 bits",
       [bs](std::int64_t s) {
         const std::int64_t s32 = static_cast<std::int32_t>(s);
         const std::int64_t p = floor_div(s32, bs);
         return std::make_pair(p, s32 - p * bs);
       }},
  };
}

// (page, token) -> culprit, for every negative slot under every model; the last row that lands
// there is the one whose bytes are visible.
std::map<std::pair<std::int64_t, std::int64_t>, AddressCulprit> culprits_by_place(
    const oracle::PagedCacheView& v, const std::vector<std::int64_t>& row_slots) {
  const std::vector<AddressModel> models = address_models(v.block_size);
  std::map<std::pair<std::int64_t, std::int64_t>, AddressCulprit> by_place;
  for (std::size_t t = 0; t < row_slots.size(); ++t) {
    const std::int64_t s = row_slots[t];
    if (s >= 0) continue;
    for (const AddressModel& m : models) {
      const auto [page, token] = m.place(s);
      auto it = by_place.find({page, token});
      if (it != by_place.end() && it->second.slot == s && it->second.arithmetic != m.name) continue;
      AddressCulprit c;
      c.row = static_cast<std::int64_t>(t);
      c.slot = s;
      c.arithmetic = m.name;
      c.page = page;
      c.token = token;
      by_place[{page, token}] = c;
    }
  }
  return by_place;
}

}  // namespace

std::vector<AddressCulprit> address_culprits(const oracle::PagedCacheView& v,
                                             const std::vector<std::int64_t>& row_slots,
                                             const std::vector<std::int64_t>& offsets_unsorted) {
  std::vector<std::int64_t> offsets = offsets_unsorted;
  std::sort(offsets.begin(), offsets.end());
  std::set<std::int64_t> addressed;
  for (std::int64_t s : row_slots)
    if (s >= 0) addressed.insert(s);
  // Every candidate with the offsets it covers; then, largest first, keep those that explain an
  // offset no kept one does (a model whose footprint only overlaps a better one's is dropped).
  std::vector<std::pair<AddressCulprit, std::vector<std::size_t>>> candidates;
  for (auto& [place, c] : culprits_by_place(v, row_slots)) {
    const auto ranges = footprint(v, c.page, c.token);
    if (!ranges) continue;
    std::vector<std::size_t> covered;
    for (const Range& rg : *ranges) {
      const auto lo = std::lower_bound(offsets.begin(), offsets.end(), rg.first);
      const auto hi = std::lower_bound(offsets.begin(), offsets.end(), rg.second);
      for (auto it = lo; it != hi; ++it) covered.push_back(static_cast<std::size_t>(it - offsets.begin()));
    }
    if (covered.empty()) continue;
    c.bytes = static_cast<std::int64_t>(covered.size());
    c.where = describe_place(v, addressed, c.page, c.token);
    candidates.emplace_back(c, std::move(covered));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.first.bytes > b.first.bytes; });
  std::vector<bool> explained(offsets.size());
  std::vector<AddressCulprit> out;
  for (const auto& [c, covered] : candidates) {
    bool adds = false;
    for (std::size_t i : covered) adds = adds || !explained[i];
    if (!adds) continue;
    for (std::size_t i : covered) explained[i] = true;
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const AddressCulprit& a, const AddressCulprit& b) { return a.row < b.row; });
  return out;
}

PolicyReport check_insert_under_profile(const InsertCase& c, const kvc::Profile& declared,
                                        const std::vector<std::uint8_t>& initial,
                                        const std::vector<std::uint8_t>& expected,
                                        const std::vector<std::uint8_t>& actual, const std::string& actual_name) {
  return explain(insert_encoder(c), declared, initial, expected, actual, actual_name,
                 c.fp8_scale.present ? c.fp8_scale.load<float>(0) : 1.0f);
}

PolicyReport check_store_under_profile(const StoreCase& c, const kvc::Profile& declared,
                                       const std::vector<std::uint8_t>& initial,
                                       const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& actual, const std::string& actual_name) {
  return explain(store_encoder(c), declared, initial, expected, actual, actual_name, 1.0f);
}

}  // namespace kvc::testkit
