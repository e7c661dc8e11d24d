// mismatch_classes.h: every differing record of a cache, named by what explains it.
//
// The comparator (backing_diff.h) says where bytes differ; this says why, one site at a time, so
// that a report reads "312 records: e4m3 ties rounded away from zero" instead of 312 byte diffs.
// A site is the record of an addressed slot (its packed584 pad byte is a site of its own), a
// foreign slot's record, one page's padding, one row gap, or the bytes outside the cache view.
// Each gets one class, the first that explains all of its differing bytes:
//
//   wrong address     inside the cache view but not where the case writes: a foreign slot's
//                     record, page padding, a row gap; or an addressed record left unwritten,
//                     holding another slot's record, or holding what a wrong page or token stride
//                     (the dense one instead of the padded one) puts there
//   untouched region  outside the cache view: before its first page, or after its last (the guard
//                     zone); the device backend's guard zones and input buffers (add_damage)
//   pad byte          packed584 scale byte 7 of an addressed slot
//   saturation / NaN  the record is the oracle's with another clamp order or Inf-block policy, or
//                     e4m3 without saturation, or bf16 NaN payloads kept (row_variants.h)
//   scale exponent    with another exponent rule or amax floor; or every differing block's scale
//                     byte differs and its codes are what that scale gives (an exponent off by n)
//   per-tensor scale  fp8_512 with fp8_scale multiplied instead of its reciprocal, or divided per
//                     element (row_variants.h)
//   RoPE pattern      with rope policy `none`, or RoPE with separately rounded products, or
//                     NeoX pairing over the RoPE dims or inside each lane (row_variants.h)
//   rounding tie      with e4m3 or bf16 ties rounded away from zero (row_variants.h)
//   unexplained       none of the above reproduces it
//
// Policies (docs/contract.md §6) are tried one flip at a time from the declared profile, then as
// the profile the profile checker (policy_report.h) found closest, with the classes it needs
// named together. A site's explanation must reproduce every differing byte of it. The Q output of
// the legacy op is not a cache record and is not classified here.
//
// Cost: per differing addressed record, a few re-encodings of one row (at most kMaxRecordSearch
// records are searched; the rest are counted as not searched); the stride models cost one oracle
// run of the case each, only when a wrong-address site needs them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "testkit/compare/policy_report.h"

namespace kvc::testkit {

enum class MismatchClass : std::uint8_t {
  kRoundingTie = 0,
  kScaleExponent,
  kSaturationNan,
  kRopePattern,
  kWrongAddress,
  kPadByte,
  kUntouchedRegion,
  kUnexplained,
  kTensorScale,
};
// In report order.
inline constexpr std::array<MismatchClass, 9> kAllMismatchClasses = {
    MismatchClass::kRoundingTie,   MismatchClass::kScaleExponent,   MismatchClass::kTensorScale,
    MismatchClass::kSaturationNan, MismatchClass::kRopePattern,     MismatchClass::kWrongAddress,
    MismatchClass::kPadByte,       MismatchClass::kUntouchedRegion, MismatchClass::kUnexplained};

// "rounding tie", "scale exponent", ... (reports) and "rounding_tie", ... (JSON keys).
std::string_view mismatch_class_name(MismatchClass c);
std::string_view mismatch_class_key(MismatchClass c);

// The class a policy's alternatives fall under (kRsqrt: unexplained; rows are checked by
// approx_rsqrt.h instead).
MismatchClass class_of_policy(kvc::Policy p);

struct ClassifiedSite {
  MismatchClass cls = MismatchClass::kUnexplained;
  std::string where;   // "slot 37 (page 2 token 5, row 12)", "page padding of page 3", ...
  std::string detail;  // what explains it: "e4m3 ties rounded away from zero: 3 fp8 codes"
  std::int64_t bytes = 0;
  std::int64_t first_offset = 0;  // of its first differing byte in the backing
};

struct MismatchClassification {
  static constexpr std::size_t kShownPerClass = 3;
  static constexpr std::int64_t kMaxRecordSearch = 65536;

  std::int64_t mismatching_bytes = 0;
  std::map<MismatchClass, std::int64_t> sites;                 // per class
  std::map<MismatchClass, std::int64_t> bytes;                 // per class
  std::map<MismatchClass, std::vector<ClassifiedSite>> shown;  // the first kShownPerClass of each
  std::int64_t not_searched = 0;  // addressed records past kMaxRecordSearch (counted as unexplained)

  void add(const ClassifiedSite& site);
  std::int64_t total_sites() const;
  std::int64_t count(MismatchClass c) const;
  bool empty() const { return total_sites() == 0; }
  // "rounding tie 12, pad byte 3" (classes with sites only), or "none".
  std::string summary_line() const;
  // Per class: the count, then the first few sites with where and what explains them.
  std::string report() const;
  // {"sites": {"rounding_tie": 12, ...}, "bytes": {...}, "examples": {"rounding_tie": [...]}}
  nlohmann::json to_json() const;
  // Sums counts (examples up to kShownPerClass per class).
  void merge(const MismatchClassification& other);
};

// Classifies every byte where `actual` differs from `expected`, the oracle's backing for the
// case under `declared` (both written over `initial`). `policy` is the profile checker's report of
// the same bytes when the caller has it (else it is computed). The case must be one the oracle
// accepts.
MismatchClassification classify_insert_mismatches(const InsertCase& c, const kvc::Profile& declared,
                                                  const std::vector<std::uint8_t>& initial,
                                                  const std::vector<std::uint8_t>& expected,
                                                  const std::vector<std::uint8_t>& actual,
                                                  const PolicyReport* policy = nullptr);

}  // namespace kvc::testkit
