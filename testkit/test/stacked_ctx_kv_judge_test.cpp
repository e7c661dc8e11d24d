// stacked_ctx_kv_judge_test.cpp: the stacked projection's judge (testkit/compare/stacked_ctx_kv_judge.h)
// on runs made by the oracle, with one defect planted each:
// - exact order: the oracle's own runs match; one pool byte, one projection element, a wrong path
//   and a rejected valid case each fail with their kind. Catches a judge that skips the pools,
//   the projection, the path or the status.
// - a sample of the tokens: a difference at a token outside the sample is still caught, because
//   the runs must agree on every token. Catches a judge that trusts the sample alone.
// - any order: a projection one budget past the oracle's fails, and pools that are not the
//   epilogue of the run's own projection fail. Catches a judge that lets the reordered sum excuse
//   the epilogue, or ignores the budget.
#include <gtest/gtest.h>

#include <vector>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"

namespace kvc {
namespace {

using testkit::StackedGemm;
using testkit::StackedRun;
using testkit::VerdictKind;

StackedCtxKvCase small_case() {
  testkit::StackedCtxKvShape shape;
  shape.layers = 2;
  shape.tokens = 6;
  shape.seed = 5;
  return testkit::make_stacked_ctx_kv_case(shape);
}

// The oracle's run of `c` on `path`, as a library run the judge takes.
StackedRun oracle_run(const StackedCtxKvCase& c, StackedPathRequest path, const char* name) {
  StackedRun r;
  r.name = name;
  r.pools = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.path = path;
  oracle::StackedCtxKvRun run;
  r.status = oracle::stacked_ctx_kv(c, r.pools, o, &run);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  r.path = run.path;
  r.projection = run.projection;
  return r;
}

std::vector<StackedRun> both_paths(const StackedCtxKvCase& c) {
  std::vector<StackedRun> runs = {oracle_run(c, StackedPathRequest::kAuto, "AUTO"),
                                  oracle_run(c, StackedPathRequest::kPerLayer, "per-layer")};
  runs[0].required_path = StackedPath::kStacked;
  runs[1].required_path = StackedPath::kPerLayer;
  return runs;
}

// The byte of the record the first live token writes, in layer 0's K pool.
std::size_t written_byte(const StackedCtxKvCase& c) {
  const std::int64_t slot = c.cache_loc.load<std::int64_t>(0);
  EXPECT_GE(slot, 0);
  const TensorMeta& k = c.layers[0].k_pool;
  return static_cast<std::size_t>(k.offset_bytes + slot * k.stride(0) * 2);
}

TEST(StackedJudge, TheOraclesRunsMatchOnBothPaths) {
  const StackedCtxKvCase c = small_case();
  const testkit::Verdict v = testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, both_paths(c), "ctest");
  EXPECT_EQ(v.kind, VerdictKind::kMatch) << v.report;
  EXPECT_GT(v.compared_bytes, 0);
}

TEST(StackedJudge, ExactOrderCatchesAPoolByteAProjectionElementAPathAndAStatus) {
  const StackedCtxKvCase c = small_case();
  {
    std::vector<StackedRun> runs = both_paths(c);
    runs[1].pools.k_pools[0][written_byte(c)] ^= 0x01;
    const testkit::Verdict v = testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, runs, "ctest -R X");
    EXPECT_EQ(v.kind, VerdictKind::kMismatch) << v.report;
    EXPECT_NE(v.report.find("per-layer"), std::string::npos) << v.report;
    EXPECT_NE(v.report.find("ctest -R X"), std::string::npos) << v.report;
  }
  {
    std::vector<StackedRun> runs = both_paths(c);
    (*runs[0].projection)[3] ^= 0x0001;
    const testkit::Verdict v = testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, runs, "ctest");
    EXPECT_EQ(v.kind, VerdictKind::kMismatch) << v.report;
    EXPECT_NE(v.report.find("projection token 0 layer 0 K head 0 dim 3"), std::string::npos) << v.report;
  }
  {
    std::vector<StackedRun> runs = both_paths(c);
    runs[0].path = StackedPath::kPerLayer;  // AUTO must take the stacked path here
    EXPECT_EQ(testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, runs, "ctest").kind, VerdictKind::kWrongPath);
  }
  {
    std::vector<StackedRun> runs = both_paths(c);
    runs[1].status = Error(ErrorCode::kStackedParamsMismatch);
    const testkit::Verdict v = testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, runs, "ctest");
    EXPECT_EQ(v.kind, VerdictKind::kStatusDiffers) << v.report;
    EXPECT_FALSE(v.passed());
  }
}

TEST(StackedJudge, ASampleStillCatchesAByteOutsideIt) {
  const StackedCtxKvCase c = small_case();
  const std::vector<std::int64_t> sample = {1, 2};  // token 0 is outside the sample
  const testkit::Verdict clean = testkit::judge_stacked(c, sample, StackedGemm::kExactOrder, both_paths(c), "ctest");
  EXPECT_EQ(clean.kind, VerdictKind::kMatch) << clean.report;
  std::vector<StackedRun> runs = both_paths(c);
  runs[1].pools.k_pools[0][written_byte(c)] ^= 0x01;
  const testkit::Verdict v = testkit::judge_stacked(c, sample, StackedGemm::kExactOrder, runs, "ctest");
  EXPECT_EQ(v.kind, VerdictKind::kMismatch) << "the runs must agree on every token\n" << v.report;
}

TEST(StackedJudge, AnyOrderHoldsTheProjectionToTheBudgetAndThePoolsToItsEpilogue) {
  const StackedCtxKvCase c = small_case();
  const StackedRun exact = oracle_run(c, StackedPathRequest::kPerLayer, "per-layer");
  const testkit::Verdict same = testkit::judge_stacked(c, {}, StackedGemm::kAnyOrder, {exact}, "ctest");
  EXPECT_EQ(same.kind, VerdictKind::kMatch) << same.report;
  EXPECT_NE(same.report.find("budget"), std::string::npos) << "the budget used is reported\n" << same.report;

  StackedRun far = exact;
  (*far.projection)[0] ^= 0x4000;  // an exponent bit: far beyond any ulp budget
  far.pools = testkit::make_stacked_outputs(c);
  ASSERT_TRUE(oracle::stacked_ctx_kv_epilogue(c, *far.projection, far.pools).ok());
  EXPECT_EQ(testkit::judge_stacked(c, {}, StackedGemm::kAnyOrder, {far}, "ctest").kind, VerdictKind::kMismatch)
      << "pools true to a projection out of budget";

  StackedRun not_its_epilogue = exact;
  not_its_epilogue.pools.v_pools[1][written_byte(c)] ^= 0x01;
  EXPECT_EQ(testkit::judge_stacked(c, {}, StackedGemm::kAnyOrder, {not_its_epilogue}, "ctest").kind,
            VerdictKind::kMismatch);
}

}  // namespace
}  // namespace kvc
