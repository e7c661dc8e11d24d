// stacked_ctx_kv_judge_run_profiles_test.cpp: runs judged under the profile of the path they took
// (StackedRun::profile in testkit/compare/stacked_ctx_kv_judge.h): a library declares one stacked
// profile for its per-layer and stacked paths and another for its fused path, and each run is held
// to its own.
// Catches: a judge that holds every run to the judgment's profile (a fused run of another profile
// would fail, or a wrongly declared per-layer run pass); one that compares two runs of different
// profiles with each other on a sample; a status judged against the oracle under another profile
// (slot 0 reserved makes a negative cache_loc E159, the contract a skip); a report that does not
// name the profile each run was held to and where it came from.
#include <gtest/gtest.h>

#include <string>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"

namespace kvc {
namespace {

using testkit::StackedGemm;
using testkit::StackedRun;
using testkit::VerdictKind;

StackedCtxKvCase many_tokens_case() {
  testkit::StackedCtxKvShape shape;
  shape.layers = 2;
  shape.tokens = 512;  // enough K elements for the two rope contractions to differ somewhere
  shape.extra_slots = 4;
  shape.skip_every = 5;
  shape.seed = 11;
  return testkit::make_stacked_ctx_kv_case(shape);
}

StackedRun oracle_run(const StackedCtxKvCase& c, const StackedProfile& p, const char* name) {
  StackedRun r;
  r.name = name;
  r.pools = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.profile = p;
  o.path = StackedPathRequest::kPerLayer;
  oracle::StackedCtxKvRun run;
  r.status = oracle::stacked_ctx_kv(c, r.pools, o, &run);
  r.path = run.path;
  if (r.status.ok()) r.projection = run.projection;
  return r;
}

StackedProfile spec(const char* s) {
  const auto p = parse_stacked_profile(s);
  EXPECT_TRUE(p.has_value()) << s;
  return p.value_or(StackedProfile{});
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(StackedJudgeRunProfiles, EachRunIsHeldToTheProfileItCarries) {
  const StackedCtxKvCase c = many_tokens_case();
  StackedRun contract = oracle_run(c, contract_stacked_profile(), "per-layer run");
  StackedRun pair = oracle_run(c, spec("rope=fma-pair"), "fused run");
  ASSERT_NE(pair.pools.k_pools, contract.pools.k_pools) << "the case must tell the two contractions apart";
  pair.profile = spec("rope=fma-pair");
  pair.profile_source = "declared for its fused path";
  const testkit::Verdict v =
      testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {contract, pair}, "ctest", contract_stacked_profile());
  EXPECT_EQ(v.kind, VerdictKind::kMatch) << v.report;
  EXPECT_TRUE(contains(v.report, "`contract`")) << v.report;
  EXPECT_TRUE(contains(v.report, "`rope=fma-pair` (declared for its fused path)")) << v.report;

  // The same bytes without their profile: held to the judgment's, the contract's, and failed.
  pair.profile.reset();
  EXPECT_EQ(testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {contract, pair}, "ctest").kind,
            VerdictKind::kMismatch);
  // A run that carries the wrong profile fails too, whatever the judgment's default.
  contract.profile = spec("rope=fma-pair");
  EXPECT_EQ(testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {contract}, "ctest", spec("rope=fma-pair")).kind,
            VerdictKind::kMismatch);
}

TEST(StackedJudgeRunProfiles, RunsOfTwoProfilesAreNotComparedWithEachOtherOnASample) {
  const StackedCtxKvCase c = many_tokens_case();
  StackedRun contract = oracle_run(c, contract_stacked_profile(), "per-layer run");
  StackedRun pair = oracle_run(c, spec("rope=fma-pair"), "fused run");
  pair.profile = spec("rope=fma-pair");
  const testkit::Verdict v = testkit::judge_stacked(c, testkit::sample_tokens(c.num_tokens(), 3, 1),
                                                    StackedGemm::kExactOrder, {contract, pair}, "ctest");
  EXPECT_EQ(v.kind, VerdictKind::kMatch) << v.report;
}

TEST(StackedJudgeRunProfiles, TheStatusIsTheOraclesUnderTheRunsProfile) {
  const StackedCtxKvCase c = many_tokens_case();  // skip_every 5: negative cache_loc entries
  const StackedProfile reserved = spec("cache-loc=slot0-reserved");
  StackedRun rejected = oracle_run(c, reserved, "slot-0 run");
  ASSERT_EQ(rejected.status.code, ErrorCode::kStackedNegativeCacheLoc);
  rejected.profile = reserved;
  EXPECT_EQ(testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {rejected}, "ctest").kind,
            VerdictKind::kRejectedAlike);
  rejected.profile.reset();  // under the contract a negative entry is a skip: E159 is a wrong status
  const testkit::Verdict v = testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {rejected}, "ctest");
  EXPECT_EQ(v.kind, VerdictKind::kStatusDiffers) << v.report;
  EXPECT_TRUE(contains(v.report, "under stacked profile `contract`")) << v.report;
}

}  // namespace
}  // namespace kvc
