// fuzz_profile_test.cpp: the properties under implementation profiles (docs/contract.md §6).
//
// Every property runs on the oracle under `sglang-store`: those whose scope holds there pass and
// cover their classes; each one whose scope excludes the profile is reported "not applicable",
// never passed, and the same property stripped of its scope fails on a generated case, so no
// exclusion is vacuous. The same for the amax floor `after` (scale-by-power-of-two excluded, shown
// on a hand-built block; dequantization-bound checked), the approximate rsqrt (dequantization-bound
// excludes cases with a norm row) and a backend whose two ops declare different profiles
// (kv-only-equals-legacy excluded). A backend with a per-case profile has only some cases
// excluded. differential runs under any profile: a planted backend that follows SGLang's policies
// while declaring `vllm` fails it with a report naming the policies, one that declares them
// honestly passes; failures write the declared profile into their case files and replay under
// the profile the file records. Campaigns run the oracle under CampaignConfig::profile and list a
// property that is not applicable apart, with its reason: neither passed nor a coverage gap.
// KVC_FUZZ_SEED and KVC_FUZZ_CASES override the seed and the number of cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "testkit/backends/oracle_backend.h"
#include "kvc/fuzz/campaign.h"
#include "differential_batch.h"
#include "kvc/oracle/bf16.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/io/case_file.h"
#include "testkit/planted/planted_backends.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/test_name.h"

namespace kvc::fuzz {
namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

kvc::Profile spec(const char* s) {
  std::string error;
  const auto p = kvc::parse_profile(s, &error);
  if (!p) throw std::invalid_argument(error);
  return *p;
}

oracle::OracleOptions under(const kvc::Profile& p) {
  oracle::OracleOptions o;
  o.profile = p;
  return o;
}

RunConfig profile_run(int cases = 60) {
  RunConfig config;
  config.seed = env_or("KVC_FUZZ_SEED", 20261203);
  config.cases = static_cast<int>(env_or("KVC_FUZZ_CASES", static_cast<std::uint64_t>(cases)));
  config.max_size = 20;  // up to ~800 tokens per case: the profile runs keep the suite short
  return config;
}

void print(const std::string& line) { std::printf("%s\n", line.c_str()); }

PropertySpec unscoped(const PropertySpec& p) {
  PropertySpec u = p;
  u.name = p.name + " (scope removed)";
  u.profiles = ProfileScope{};
  return u;
}

// The property with its scope removed must fail under `sut`'s profile: the exclusion is needed.
void expect_fails_without_its_scope(const PropertySpec& p, testkit::Backend& sut) {
  const PropertyOutcome u = run_property(unscoped(p), sut, profile_run(200));
  EXPECT_FALSE(u.passed) << p.name << " held on " << u.cases << " cases of " << sut.name()
                         << " without its scope: the exclusion (" << p.profiles.description
                         << ") is not needed; classes generated: " << ::testing::PrintToString(u.coverage);
  ASSERT_TRUE(u.failure.has_value()) << u.message;
  std::printf("%s without its scope fails on %s:\n%s\n", p.name.c_str(), sut.name().c_str(),
              u.failure->message.substr(0, 500).c_str());
}

// The property's check, its scope removed, on one input: the failure message, or nothing.
std::optional<std::string> check_once(const PropertySpec& p, testkit::Backend& sut, const PropertyInput& in) {
  Coverage coverage;
  std::optional<FailureRecord> failure;
  PropertyContext ctx{sut, coverage, &failure};
  try {
    p.check(in, ctx);
  } catch (...) {  // RC_FAIL outside a RapidCheck run
  }
  return failure ? std::optional<std::string>(failure->message) : std::nullopt;
}

// A hand-built input the property fails on under `sut`'s profile once its scope is removed, and
// holds on under the contract's: for an edge a short generated run reaches too rarely.
void expect_witness_fails_without_its_scope(const PropertySpec& p, testkit::Backend& sut, const PropertyInput& in) {
  testkit::OracleBackend vllm;
  const std::optional<std::string> under_vllm = check_once(p, vllm, in);
  EXPECT_FALSE(under_vllm.has_value()) << "the witness is not one: " << p.name << " fails on it under vllm\n"
                                       << *under_vllm;
  const std::optional<std::string> m = check_once(p, sut, in);
  ASSERT_TRUE(m.has_value()) << p.name << " holds on its witness on " << sut.name()
                             << " without its scope: the exclusion (" << p.profiles.description << ") is not needed";
  std::printf("%s without its scope fails on %s (witness):\n%s\n", p.name.c_str(), sut.name().c_str(), m->c_str());
}

// Runs `p` on the oracle under `profile`: it passes and covers its classes when its scope holds
// there, else it is not applicable (no case, no failure, the reason naming the profile) and fails
// once its scope is removed: on a generated case, or on `witness` when one is given.
void check_scope_decides(const PropertySpec& p, const kvc::Profile& profile,
                         const std::optional<PropertyInput>& witness = std::nullopt) {
  testkit::OracleBackend sut(under(profile));
  const PropertyOutcome o = run_property(p, sut, profile_run());
  std::printf("%s under %s: %d cases in %.2f s%s%s\n", p.name.c_str(), kvc::profile_name(profile).c_str(), o.cases,
              o.seconds, o.not_applicable.empty() ? "" : ", ", o.not_applicable.c_str());
  if (p.profiles.holds_under(profile)) {
    ASSERT_TRUE(o.passed) << (o.failure ? o.failure->message : o.message)
                          << "\nreproduce: KVC_FUZZ_SEED=" << profile_run().seed
                          << " ctest --test-dir build/default -R '"
                          << ::testing::UnitTest::GetInstance()->current_test_info()->name() << "$'";
    EXPECT_TRUE(o.not_applicable.empty());
    EXPECT_TRUE(o.missing_classes.empty())
        << "required classes never generated: " << ::testing::PrintToString(o.missing_classes);
    return;
  }
  EXPECT_FALSE(o.passed) << "a property outside its profiles was reported as passed";
  EXPECT_FALSE(o.failure.has_value());
  EXPECT_EQ(o.cases, 0);
  EXPECT_NE(o.not_applicable.find("not applicable under " + kvc::profile_name(profile)), std::string::npos)
      << o.not_applicable;
  EXPECT_NE(o.not_applicable.find(p.profiles.description), std::string::npos) << o.not_applicable;
  if (witness)
    expect_witness_fails_without_its_scope(p, sut, *witness);
  else
    expect_fails_without_its_scope(p, sut);
}

class UnderSglangStore : public ::testing::TestWithParam<std::string> {};

TEST_P(UnderSglangStore, HoldsOrIsNotApplicableAndWouldFail) {
  check_scope_decides(*find_property(GetParam()), kvc::sglang_store_profile());
}

INSTANTIATE_TEST_SUITE_P(Fuzz, UnderSglangStore, ::testing::ValuesIn(property_names()), testkit::DashedParamName());

// Anti-vacuity of the parameterized test: sglang-store excludes at least one property, and the
// contract's own profile excludes none.
TEST(ProfileScope, SglangStoreExcludesSomePropertiesAndVllmNone) {
  int excluded = 0;
  for (const PropertySpec& p : all_properties()) {
    EXPECT_TRUE(p.profiles.holds_under(kvc::vllm_profile())) << p.name << " excludes the contract's profile";
    excluded += p.profiles.holds_under(kvc::sglang_store_profile()) ? 0 : 1;
    EXPECT_FALSE(p.profiles.description.empty()) << p.name << " does not say which profiles it holds under";
  }
  EXPECT_GE(excluded, 1);
}

// A packed528 block of amax about 0.04 that the property scales by 2^-3, to about 0.005: under the
// floor `after` that block's E stays at -13 (fl(amax / 448) <= 2^-14) where the scaling asks -16.
// Generated blocks have amax >= 448 * 2^-12 (a short run rarely picks one that small to scale down).
PropertyInput small_amax_block_scaled_down() {
  PropertyInput in{testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked528), std::uint64_t{1} << 24};
  // The row, block and j the property derives from aux (properties.cpp, scale_by_power_of_two).
  std::vector<std::int64_t> live;
  for (std::int64_t t = 0; t < in.c.num_inserted(); ++t)
    if (in.c.slots.load<std::int64_t>(t) >= 0) live.push_back(t);
  const std::int64_t row = live[in.aux % live.size()];
  const int width = layout_of(RecordFormat::kPacked528).quant_block_dims;
  const int block = static_cast<int>((in.aux >> 16) % static_cast<std::uint64_t>(kNopeDim / width));
  EXPECT_EQ(static_cast<int>((in.aux >> 24) % 9) - 4, -3);
  for (int i = 0; i < width; ++i) {
    const std::int64_t idx = row * kHeadDim + block * width + i;
    in.c.kv.store<std::uint16_t>(
        idx, oracle::float_to_bf16(std::ldexp(oracle::bf16_to_float(in.c.kv.load<std::uint16_t>(idx)), -6)));
  }
  return in;
}

TEST(ProfileScope, ScaleByPowerOfTwoIsExcludedUnderTheFloorAfterTheDivision) {
  check_scope_decides(*find_property("scale-by-power-of-two"), spec("floor=after"), small_amax_block_scaled_down());
}

TEST(ProfileScope, DequantizationBoundHoldsUnderTheFloorAfterTheDivision) {
  const PropertySpec& p = *find_property("dequantization-bound");
  ASSERT_TRUE(p.profiles.holds_under(spec("floor=after")));
  check_scope_decides(p, spec("floor=after"));
}

// The oracle with the approximate rsqrt on the fused kv_norm, declared: every norm row recomputed
// with r' = r + kApproxRsqrtMaxUlps ulps (the most the declaration allows, docs/contract.md §2.5).
class ApproximateKvNormOracle final : public testkit::Backend {
 public:
  std::string name() const override { return "oracle with an approximate kv_norm rsqrt (+2 ulps)"; }
  RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const override {
    return op == InsertOp::kKvOnly && !q_norm ? RsqrtMode::kApproximate : RsqrtMode::kCorrectlyRounded;
  }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    const Status s = testkit::OracleBackend().run(c, out);
    if (s.ok() && c.op == InsertOp::kKvOnly)
      for (const testkit::NormRow& row : testkit::norm_rows(c))
        testkit::rewrite_norm_row(c, row, kApproxRsqrtMaxUlps, out);
    return s;
  }
};

// dequantization-bound takes its bound from the correctly rounded norm: under the approximate
// rsqrt, cases with a norm row are excluded (the others still run), and without the exclusion a
// code of such a row leaves the bound. The backend itself is right: differential accepts it.
TEST(ProfileScope, DequantizationBoundExcludesNormRowsUnderTheApproximateRsqrt) {
  const PropertySpec& p = *find_property("dequantization-bound");
  ApproximateKvNormOracle sut;
  const PropertyOutcome o = run_property(p, sut, profile_run());
  std::printf("%s on %s: %d cases, %d not applicable\n", p.name.c_str(), sut.name().c_str(), o.cases,
              o.not_applicable_cases);
  ASSERT_TRUE(o.passed) << (o.failure ? o.failure->message : o.message);
  EXPECT_GT(o.not_applicable_cases, 0);
  // The rsqrt policy changes no byte of a case without a norm row: a kv_norm case whose slots are
  // all skipped is judged as `rn` and checked.
  CaseRecipe skipped;
  skipped.format = RecordFormat::kFp8_512;
  skipped.tokens = 4;
  skipped.fused_kv_norm = true;
  skipped.skip = SkipMode::kAll;
  EXPECT_FALSE(not_applicable(p, sut, build_case(skipped)).has_value());
  // Witnesses: fp8_512 problems of 512 rows, all through the kv_norm.
  std::optional<std::string> failure;
  for (std::uint64_t seed = 1; seed <= 20 && !failure; ++seed) {
    CaseRecipe r;
    r.format = RecordFormat::kFp8_512;
    r.block_size = 16;
    r.tokens = 512;
    r.fused_kv_norm = true;
    r.seed = seed;
    const PropertyInput in{build_case(r), 0};
    ASSERT_TRUE(not_applicable(p, sut, in.c).has_value());
    testkit::OracleBackend vllm;
    ASSERT_FALSE(check_once(unscoped(p), vllm, in).has_value()) << "seed " << seed << " fails under rn";
    failure = check_once(unscoped(p), sut, in);
    if (failure) {
      std::printf("dequantization-bound without its scope fails on seed %llu:\n%s\n",
                  static_cast<unsigned long long>(seed), failure->c_str());
      testkit::Backend& as_backend = sut;
      EXPECT_FALSE(check_once(*find_property("differential"), as_backend, in).has_value())
          << "differential rejects the approximate rsqrt it should accept";
    }
  }
  EXPECT_TRUE(failure.has_value()) << "no witness: the rsqrt exclusion of dequantization-bound is not needed";
}

// Runs the KV-only op under one profile and the legacy op under another, declaring each honestly.
class TwoProfileOracle final : public testkit::Backend {
 public:
  TwoProfileOracle(kvc::Profile kv_only, kvc::Profile legacy) : kv_(kv_only), legacy_(legacy) {}
  std::string name() const override {
    return "oracle[KV-only " + kvc::profile_name(kv_) + ", legacy " + kvc::profile_name(legacy_) + "]";
  }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    return testkit::OracleBackend(under(c.op == InsertOp::kLegacy ? legacy_ : kv_)).run(c, out);
  }
  kvc::Profile declared_profile(const InsertCase& c) const override {
    return c.op == InsertOp::kLegacy ? legacy_ : kv_;
  }

 private:
  kvc::Profile kv_, legacy_;
};

TEST(ProfileScope, KvOnlyEqualsLegacyNeedsBothOpsUnderTheSameRecordPolicies) {
  const PropertySpec& p = *find_property("kv-only-equals-legacy");
  TwoProfileOracle sut(kvc::vllm_profile(), kvc::sglang_store_profile());
  const PropertyOutcome o = run_property(p, sut, profile_run(20));
  std::printf("%s\n", o.not_applicable.c_str());
  EXPECT_FALSE(o.passed);
  EXPECT_FALSE(o.failure.has_value());
  EXPECT_NE(o.not_applicable.find("the KV-only op declares vllm and the legacy op sglang-store"), std::string::npos)
      << o.not_applicable;
  PropertySpec without = unscoped(p);
  ASSERT_FALSE(without.profiles.same_record_policies_across_ops);
  expect_fails_without_its_scope(p, sut);
  // The same profile on both ops (rsqrt aside: it concerns the legacy op's Q norm) applies.
  TwoProfileOracle same(kvc::sglang_store_profile(), kvc::sglang_store_profile());
  EXPECT_FALSE(not_applicable(p, same).has_value());
  // rsqrt alone never excludes.
  kvc::Profile approx = kvc::vllm_profile();
  approx.rsqrt = RsqrtMode::kApproximate;
  TwoProfileOracle rsqrt_only(kvc::vllm_profile(), approx);
  EXPECT_FALSE(not_applicable(p, rsqrt_only).has_value());
}

// Declares (and runs) sglang-store on packed584 only: negation-flips-sign skips exactly those
// cases, counts them, and holds on the rest.
class PackedSglangOracle final : public testkit::Backend {
 public:
  std::string name() const override { return "oracle[sglang-store on packed584 only]"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    return testkit::OracleBackend(under(of(c))).run(c, out);
  }
  kvc::Profile declared_profile(const InsertCase& c) const override { return of(c); }

 private:
  static kvc::Profile of(const InsertCase& c) {
    return format_of(c) == RecordFormat::kPacked584 ? kvc::sglang_store_profile() : kvc::vllm_profile();
  }
};

TEST(ProfileScope, APerCaseProfileExcludesOnlyItsCases) {
  const PropertySpec& p = *find_property("negation-flips-sign");
  PackedSglangOracle sut;
  const PropertyOutcome o = run_property(p, sut, profile_run(60));
  std::printf("negation-flips-sign on %s: %d cases, %d not applicable\n", sut.name().c_str(), o.cases,
              o.not_applicable_cases);
  ASSERT_TRUE(o.passed) << (o.failure ? o.failure->message : o.message);
  EXPECT_TRUE(o.not_applicable.empty());
  EXPECT_GT(o.not_applicable_cases, 0);
  EXPECT_EQ(o.discarded, 0) << "not-applicable cases are counted apart from unsupported ones";
  EXPECT_EQ(o.coverage.count("format:packed584"), 0u) << "an excluded case's classes were counted";
  EXPECT_GT(o.coverage.count("format:packed528"), 0u);
}

// ---- differential under any profile ----

// The differential property's failure message on `sut` (its first 1500 characters printed); the
// test fails with `why_it_must_fail` when the property passes, and "" is returned then.
std::string differential_failure(testkit::PlantedBackend& sut, int cases, const char* why_it_must_fail) {
  const PropertyOutcome o = run_property(*find_property("differential"), sut, profile_run(cases));
  EXPECT_FALSE(o.passed) << why_it_must_fail;
  if (!o.failure) {
    ADD_FAILURE() << o.message;
    return {};
  }
  std::printf("%s\n", o.failure->message.substr(0, 1500).c_str());
  return o.failure->message;
}

TEST(DifferentialUnderProfiles, SglangPoliciesDeclaredAsVllmFailNamingThePolicies) {
  testkit::PlantedBackend sut(kvc::sglang_store_profile(), kvc::vllm_profile());
  const std::string m =
      differential_failure(sut, 60, "differential passed a backend that follows sglang-store and declares vllm");
  if (m.empty()) return;
  EXPECT_NE(m.find("vs the oracle under its declared profile `vllm`"), std::string::npos);
  EXPECT_NE(m.find(" follow "), std::string::npos);
  EXPECT_NE(m.find("; declared profile `vllm`"), std::string::npos);
  EXPECT_NE(m.find("every addressed record matches profile `"), std::string::npos);
  EXPECT_EQ(m.find("ADDRESS ERRORS"), std::string::npos) << "policy bytes reported as address errors";
}

TEST(DifferentialUnderProfiles, TheSglangClampOrderIsNamedAsSuch) {
  testkit::PlantedBackend sut(spec("clamp=sglang"), kvc::vllm_profile());
  const std::string m = differential_failure(sut, 120, "differential passed a backend that encodes NaN as 0x7E");
  if (m.empty()) return;
  EXPECT_NE(m.find("fp8 codes follow clamp order `sglang`; declared profile `vllm`"), std::string::npos);
  EXPECT_NE(m.find("every addressed record matches profile `clamp=sglang`"), std::string::npos);
}

TEST(DifferentialUnderProfiles, ABackendDeclaringItsSglangPoliciesPasses) {
  testkit::PlantedBackend sut(kvc::sglang_store_profile(), kvc::sglang_store_profile());
  const PropertySpec& p = *find_property("differential");
  const PropertyOutcome o = run_property(p, sut, profile_run());
  ASSERT_TRUE(o.passed) << (o.failure ? o.failure->message : o.message);
  EXPECT_TRUE(o.missing_classes.empty()) << ::testing::PrintToString(o.missing_classes);
  EXPECT_GT(o.coverage.count("profile:sglang-store"), 0u);
  EXPECT_EQ(o.coverage.count("profile:vllm"), 0u);
}

// ---- case files and replay ----

TEST(ProfileCaseFiles, AFailureRecordsTheDeclaredProfileAndReplaysUnderIt) {
  CampaignConfig config;
  config.seconds = 60;
  config.properties = {"differential"};
  config.profile = kvc::sglang_store_profile();
  config.mutation = oracle::OracleMutation::kTiesAwayFromZero;
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + "kvc-profile-corpus";
  const CampaignSummary s = run_campaign(config, print);
  ASSERT_EQ(s.failure_files.size(), 1u) << "the mutant survived under sglang-store";
  auto file = testkit::read_json_file(s.failure_files[0]);
  EXPECT_EQ(file.at("case").at("profile"), "sglang-store");
  EXPECT_EQ(testkit::case_profile_from_json(file.at("case")), kvc::sglang_store_profile());
  const std::optional<std::string> again = replay_case_file(file);
  ASSERT_TRUE(again.has_value()) << "the failure did not replay";
  EXPECT_NE(again->find("declared profile `sglang-store`"), std::string::npos) << *again;
  // The profile read from the file is the one the replay runs under.
  file["case"]["profile"] = "vllm";
  const std::optional<std::string> as_vllm = replay_case_file(file);
  ASSERT_TRUE(as_vllm.has_value());
  EXPECT_NE(as_vllm->find("declared profile `vllm`"), std::string::npos) << *as_vllm;
  file["case"]["profile"] = "sglang-store";
  file["mutation"] = "none";
  EXPECT_FALSE(replay_case_file(file).has_value()) << "the oracle under sglang-store failed its own case";
  std::filesystem::remove_all(config.corpus_dir);
}

TEST(ProfileCaseFiles, APlantedMismatchReplaysAgainstTheBackendAndPassesOnTheOracle) {
  testkit::PlantedBackend sut(kvc::sglang_store_profile(), kvc::vllm_profile());
  const CampaignConfig config = one_differential_batch("kvc-profile-planted-corpus");
  const CampaignSummary s = run_campaign(config, sut, print);
  ASSERT_EQ(s.failure_files.size(), 1u);
  const auto file = testkit::read_json_file(s.failure_files[0]);
  EXPECT_EQ(file.at("case").at("profile"), "vllm") << "the file must record the profile the backend declared";
  EXPECT_TRUE(replay_case_file(file, sut).has_value());
  EXPECT_FALSE(replay_case_file(file).has_value()) << "the oracle under vllm failed the case";
  std::filesystem::remove_all(config.corpus_dir);
}

TEST(ProfileCaseFiles, ReplayRefusesAPropertyNotApplicableUnderTheFilesProfile) {
  nlohmann::json file;
  file["contract_version"] = kContractVersion;
  file["property"] = "negation-flips-sign";
  file["seed"] = 1;
  file["mutation"] = "none";
  file["aux"] = 0;
  file["case"] = testkit::case_to_json(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584),
                                       kvc::sglang_store_profile());
  try {
    (void)replay_case_file(file);
    ADD_FAILURE() << "a negation case under sglang-store was replayed";
  } catch (const std::runtime_error& e) {
    std::printf("%s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("not applicable under sglang-store"), std::string::npos) << e.what();
  }
  file["case"]["profile"] = "vllm";
  EXPECT_FALSE(replay_case_file(file).has_value());
}

// ---- campaigns ----

const PropertyStats& stats_of(const CampaignSummary& s, const std::string& name) {
  for (const PropertyStats& p : s.properties)
    if (p.name == name) return p;
  throw std::runtime_error("no property " + name + " in the summary");
}

// Two cheap planted properties (decoder-total's check): one for every profile, one for Inf block
// `vllm` only.
CampaignConfig planted_profile_campaign(const kvc::Profile& profile) {
  PropertySpec everywhere = *find_property("decoder-total");
  PropertySpec vllm_inf = everywhere;
  vllm_inf.name = "vllm-inf-only";
  vllm_inf.profiles.description = "Inf block `vllm` (planted)";
  vllm_inf.profiles.holds = [](const kvc::Profile& p) { return p.inf_block == kvc::InfBlockInverse::kZero; };
  CampaignConfig config;
  config.seconds = 600;
  config.max_rounds = 2;
  config.max_size = 5;
  config.property_table = {everywhere, vllm_inf};
  config.profile = profile;
  return config;
}

TEST(ProfileCampaign, ANotApplicablePropertyIsListedApartNeitherPassedNorAGap) {
  const CampaignSummary s = run_campaign(planted_profile_campaign(kvc::sglang_store_profile()), print);
  const std::string text = format_summary(s);
  std::printf("%s", text.c_str());
  EXPECT_EQ(s.backend, "oracle[profile:sglang-store]");
  const PropertyStats& n = stats_of(s, "vllm-inf-only");
  EXPECT_NE(n.not_applicable.find("not applicable under sglang-store"), std::string::npos) << n.not_applicable;
  EXPECT_EQ(n.cases, 0);
  EXPECT_EQ(n.runs, 0);
  EXPECT_GT(stats_of(s, "decoder-total").cases, 0);
  EXPECT_EQ(s.properties_not_applicable().size(), 1u);
  EXPECT_TRUE(s.properties_without_cases().empty());
  EXPECT_TRUE(s.coverage_gaps().empty()) << ::testing::PrintToString(s.coverage_gaps());
  EXPECT_EQ(s.exit_code(), kExitPassed);
  EXPECT_NE(text.find("NOT APPLICABLE vllm-inf-only: not applicable under sglang-store"), std::string::npos);
  EXPECT_NE(text.find("1 not applicable under the backend's profile, neither passed nor checked"), std::string::npos);
  EXPECT_EQ(text.find("every property ran"), std::string::npos);
  // The summary keeps it through JSON and segment merging.
  const CampaignSummary back = CampaignSummary::from_json(s.to_json());
  EXPECT_EQ(stats_of(back, "vllm-inf-only").not_applicable, n.not_applicable);
  EXPECT_EQ(s.to_json().at("properties_not_applicable").size(), 1u);
  const CampaignSummary merged = merge_summaries({s, back});
  EXPECT_EQ(merged.properties_not_applicable(), s.properties_not_applicable());
  EXPECT_EQ(merged.exit_code(), kExitPassed);
}

// Anti-vacuity: under the contract's profile the same property runs.
TEST(ProfileCampaign, UnderVllmThePlantedPropertyRuns) {
  const CampaignSummary s = run_campaign(planted_profile_campaign(kvc::vllm_profile()), print);
  EXPECT_EQ(s.backend, "oracle");
  EXPECT_TRUE(stats_of(s, "vllm-inf-only").not_applicable.empty());
  EXPECT_GT(stats_of(s, "vllm-inf-only").cases, 0);
  EXPECT_TRUE(s.properties_not_applicable().empty());
  EXPECT_NE(format_summary(s).find("verdict: passed (every property ran"), std::string::npos);
}

// A summary written before profiles (no not_applicable fields) still reads: every property applied.
TEST(ProfileCampaign, ASummaryWithoutProfileFieldsReads) {
  const CampaignSummary s = run_campaign(planted_profile_campaign(kvc::vllm_profile()), print);
  nlohmann::json j = s.to_json();
  for (auto& q : j.at("properties")) {
    q.erase("not_applicable");
    q.erase("not_applicable_cases");
  }
  const CampaignSummary back = CampaignSummary::from_json(j);
  EXPECT_TRUE(back.properties_not_applicable().empty());
  EXPECT_EQ(back.exit_code(), s.exit_code());
}

// The real table: a campaign honours CampaignConfig::profile (under vllm negation-flips-sign would
// run) and says why negation-flips-sign is not run.
TEST(ProfileCampaign, TheOracleRunsUnderTheCampaignsProfile) {
  CampaignConfig config;
  config.seconds = 600;
  config.max_rounds = 1;
  config.batch_cases = 3;
  config.max_size = 5;
  config.properties = {"negation-flips-sign", "differential"};
  config.profile = kvc::sglang_store_profile();
  std::vector<std::string> lines;
  const CampaignSummary s = run_campaign(config, [&](const std::string& l) {
    lines.push_back(l);
    print(l);
  });
  EXPECT_NE(stats_of(s, "negation-flips-sign").not_applicable.find("Inf block `vllm`"), std::string::npos);
  EXPECT_GT(stats_of(s, "differential").class_hits.count("profile:sglang-store"), 0u);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("negation-flips-sign: not applicable under sglang-store") != std::string::npos;
  }));
}

// A failing batch under a profile prints a re-run line that carries it.
TEST(ProfileCampaign, TheReRunLineCarriesTheProfile) {
  CampaignConfig config;
  config.seconds = 60;
  config.properties = {"differential"};
  config.profile = spec("clamp=sglang,pad=keep");
  config.mutation = oracle::OracleMutation::kTiesAwayFromZero;
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + "kvc-profile-rerun-corpus";
  std::string report;
  const CampaignSummary s = run_campaign(config, [&](const std::string& l) { report += l + "\n"; });
  ASSERT_EQ(s.failure_files.size(), 1u);
  std::printf("%s", report.c_str());
  EXPECT_NE(report.find(" run --profile clamp=sglang,pad=keep --mutation ties-away-from-zero --property differential"),
            std::string::npos);
  EXPECT_EQ(report.find("replay on the device"), std::string::npos) << "an oracle profile's failure is no device's";
  std::filesystem::remove_all(config.corpus_dir);
}

}  // namespace
}  // namespace kvc::fuzz
