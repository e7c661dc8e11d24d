// properties.h: the fuzz properties, one table shared by the ctest suite and kvconform-fuzz.
//
// Each property checks one claim of the contract on generated problems. All runs go through the
// backend under test (the oracle by default, a mutant oracle in the mutation test, the kernels
// later), so metamorphic claims (permutation, splitting, idempotence, ...) hold for whatever runs;
// the differential property compares it against the oracle byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvc/fuzz/case_recipe.h"
#include "kvc/fuzz/generators.h"
#include "kvc/testkit/backend.h"

namespace kvc::fuzz {

// The input of the last failing evaluation: after shrinking, the minimal counterexample.
struct FailureRecord {
  PropertyInput input;
  std::string message;
};

struct PropertyContext {
  testkit::Backend& sut;
  Coverage& coverage;
  std::optional<FailureRecord>* last_failure;
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
