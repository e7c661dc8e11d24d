// properties.h: the fuzz properties, one table shared by the ctest suite and kvconform-fuzz.
//
// Each property checks one claim of the contract on generated problems. All runs go through the
// backend under test (the oracle by default, a mutant oracle in the mutation test, the kernels
// later), so metamorphic claims (permutation, splitting, idempotence, ...) hold for whatever runs;
// the differential property compares it against the oracle byte for byte through the judge
// (testkit/compare/judge.h: under the profile and rsqrt mode the backend declares), as the GPU
// suites and the runner do. Every property has a planted-defect test
// (fuzz/test/fuzz_planted_defect_test.cpp) that shows it failing on the defect it exists to catch.
// With the oracle as the backend under test, differential and kv-only-equals-legacy compare the
// oracle with itself (the legacy op runs the KV-only encoder) and cannot fail: they become
// meaningful when a kernel backend is under test.
//
// Implementation profiles (docs/contract.md §6): differential compares a backend with the oracle
// under the profile the backend declares (testkit/compare/judge.h), so it holds under every
// profile. Every other property states the profiles its claim holds under (PropertySpec::profiles),
// derived from the policies' definitions; a case whose declared profile lies outside them is
// "not applicable", never passed: the run, the campaign summary and the gtest suites say so with
// the reason (fuzz/test/fuzz_profile_test.cpp shows each exclusion is needed).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvc/fuzz/case_recipe.h"
#include "kvc/fuzz/generators.h"
#include "kvc/profile.h"
#include "kvc/oracle/record_codec.h"
#include "testkit/backends/backend.h"

namespace kvc::fuzz {

// The input of the last failing evaluation: after shrinking, the minimal counterexample.
struct FailureRecord {
  PropertyInput input;
  std::string message;
  // The profile the backend declared for the input: the one its expectations hold under, which
  // the case file records (docs/contract.md §6.5).
  kvc::Profile profile = kvc::vllm_profile();
};

// The record codec entry points decoder-total exercises. Null members mean the oracle's own;
// the planted-defect test substitutes a defective one to show the property can fail.
struct CodecUnderTest {
  std::function<oracle::ByteLocation(const oracle::PagedCacheView&, std::int64_t)> locate;
  std::function<oracle::DecodedRecord(const std::vector<std::uint8_t>&, const oracle::PagedCacheView&, std::int64_t)>
      decode;
};

struct PropertyContext {
  testkit::Backend& sut;
  Coverage& coverage;
  std::optional<FailureRecord>* last_failure;
  const CodecUnderTest* codec = nullptr;  // decoder-total only; null: the oracle's codec
};

// The implementation profiles a property's claim holds under (docs/contract.md §6).
struct ProfileScope {
  std::string description = "every profile";
  // On the profile a case is judged under (judged_profile()); null: every profile.
  std::function<bool(const kvc::Profile&)> holds;
  // The property runs each problem through both ops and compares their records: it also needs the
  // legacy op to declare the KV-only op's record policies (every policy but rsqrt, which concerns
  // the legacy op's Q norm only).
  bool same_record_policies_across_ops = false;

  bool holds_under(const kvc::Profile& p) const { return !holds || holds(p); }
};

struct PropertySpec {
  std::string name;
  std::string claim;
  GenConfig generation;
  // Classes that a run must have generated; the run fails when one got no hits.
  std::vector<std::string> required_classes;
  // Checks one input; fails through RapidCheck (RC_FAIL) after recording the failure.
  std::function<void(const PropertyInput&, PropertyContext&)> check;
  // Runs take this many times the configured case count: a property that draws one of many
  // rules per case needs more cases to hit each of them.
  int case_multiplier = 1;
  ProfileScope profiles;
};

const std::vector<PropertySpec>& all_properties();
const PropertySpec* find_property(const std::string& name);
// The names of all_properties(), in table order.
std::vector<std::string> property_names();

// The profile a property is judged under for case c: what `sut` declares for it, with the rsqrt
// policy taken as `rn` when c has no norm row (the policy changes no byte of such a case, §6.1).
kvc::Profile judged_profile(const testkit::Backend& sut, const InsertCase& c);

// Why `property` does not apply to case c on `sut`: "not applicable under sglang-store (holds
// under: ...)". Nothing when it applies.
std::optional<std::string> not_applicable(const PropertySpec& property, const testkit::Backend& sut,
                                          const InsertCase& c);
// The same for the backend as a whole, probed with a small case of every op and format the
// property generates: the reason when it applies to none of them. A backend that declares
// different profiles per case may still have some cases excluded (run_property counts them).
std::optional<std::string> not_applicable(const PropertySpec& property, const testkit::Backend& sut);

}  // namespace kvc::fuzz
