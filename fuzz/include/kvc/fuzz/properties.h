// properties.h: the fuzz properties, one table shared by the ctest suite and kvconform-fuzz.
//
// Each property checks one claim of the contract on generated problems. All runs go through the
// backend under test (the oracle by default, a mutant oracle in the mutation test, the kernels
// later), so metamorphic claims (permutation, splitting, idempotence, ...) hold for whatever runs;
// the differential property compares it against the oracle byte for byte (under the rsqrt mode
// the backend declares, testkit/approx_rsqrt.h). Every property has a planted-defect test
// (fuzz/test/fuzz_planted_defect_test.cpp) that shows it failing on the defect it exists to catch.
// With the oracle as the backend under test, differential and kv-only-equals-legacy compare the
// oracle with itself (the legacy op runs the KV-only encoder) and cannot fail: they become
// meaningful when a kernel backend is under test.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvc/fuzz/case_recipe.h"
#include "kvc/fuzz/generators.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/testkit/backend.h"

namespace kvc::fuzz {

// The input of the last failing evaluation: after shrinking, the minimal counterexample.
struct FailureRecord {
  PropertyInput input;
  std::string message;
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
};

const std::vector<PropertySpec>& all_properties();
const PropertySpec* find_property(const std::string& name);

}  // namespace kvc::fuzz
