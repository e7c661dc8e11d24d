// fuzz_properties_test.cpp: every property, a short fixed-seed run, with its coverage requirement.
//
// A run passes only when RapidCheck found no counterexample AND every class the property requires
// was generated at least once: a property that never saw a NaN cannot claim anything about NaN.
// KVC_FUZZ_SEED and KVC_FUZZ_CASES override the seed and the number of cases; KVC_FUZZ_PROFILE
// (a profile spec, docs/contract.md §6.2) runs the oracle under that profile, where a property whose
// claim does not hold is skipped with the reason (fuzz_profile_test covers sglang-store).
#include <gtest/gtest.h>

#include <cstdlib>

#include "testkit/backends/oracle_backend.h"
#include "kvc/fuzz/campaign.h"
#include "testkit/cases/test_name.h"

namespace kvc::fuzz {
namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

class Property : public ::testing::TestWithParam<std::string> {};

TEST_P(Property, HoldsAndCoversItsClasses) {
  const PropertySpec& p = *find_property(GetParam());
  RunConfig config;
  config.seed = env_or("KVC_FUZZ_SEED", 20261129);
  config.cases = static_cast<int>(env_or("KVC_FUZZ_CASES", 120));  // times the property's case multiplier
  config.max_size = 40;  // up to ~1600 tokens per case keeps the CI pass short
  oracle::OracleOptions options;
  if (const char* spec = std::getenv("KVC_FUZZ_PROFILE")) {
    std::string error;
    const auto profile = kvc::parse_profile(spec, &error);
    ASSERT_TRUE(profile.has_value()) << "KVC_FUZZ_PROFILE: " << error;
    options.profile = *profile;
  }
  testkit::OracleBackend oracle(options);
  const PropertyOutcome o = run_property(p, oracle, config);
  if (!o.not_applicable.empty()) GTEST_SKIP() << p.name << " on " << oracle.name() << ": " << o.not_applicable;
  std::printf("%s: %d cases in %.2f s (%.0f cases/s), seed %llu\n", p.name.c_str(), o.cases, o.seconds,
              o.seconds > 0 ? o.cases / o.seconds : 0.0, static_cast<unsigned long long>(config.seed));
  for (const auto& [cls, n] : o.coverage) std::printf("  %-28s %lld\n", cls.c_str(), static_cast<long long>(n));
  ASSERT_TRUE(o.passed) << (o.failure ? o.failure->message : o.message) << "\nreproduce: KVC_FUZZ_SEED=" << config.seed
                        << " ctest --test-dir build/default -R 'Property.HoldsAndCoversItsClasses/" << GetParam()
                        << "$'";
  EXPECT_TRUE(o.missing_classes.empty()) << "required classes never generated: "
                                         << ::testing::PrintToString(o.missing_classes);
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Property, ::testing::ValuesIn(property_names()), testkit::DashedParamName());

// Anti-vacuity of the accounting itself: a run on a generator that cannot produce a required
// class reports it as missing.
TEST(CoverageAccounting, ReportsAClassThatWasNeverGenerated) {
  PropertySpec p = *find_property("idempotent");
  p.generation.packed_only = true;
  p.required_classes = {"format:bf16_512"};
  testkit::OracleBackend oracle;
  const PropertyOutcome o = run_property(p, oracle, RunConfig{1, 20, 10, true});
  ASSERT_TRUE(o.passed);
  EXPECT_EQ(o.missing_classes, std::vector<std::string>{"format:bf16_512"});
}

}  // namespace
}  // namespace kvc::fuzz
