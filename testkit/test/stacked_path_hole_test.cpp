// stacked_path_hole_test.cpp: the stacked judge's eligibility-hole check (stacked_path_hole() in
// testkit/compare/stacked_ctx_kv_judge.h; issue 25: a library whose eligibility check does not
// compare head_dim, kv heads or dtype takes the stacked path on such a model and writes every layer
// in layer 0's shape). Fake runs: the oracle's per-layer bytes, reported as the stacked path.
// Catches: a judge that trusts the bytes and lets a library that reports the stacked path on an
// ineligible model pass (the path is the defect, whatever it wrote); one that checks the path only
// when the call required one (a plain AUTO call would slip through); a report that does not say
// which layer and shape made the model ineligible; a judge that fails a stacked run on an
// eligible model, or a per-layer run on an ineligible one.
#include <gtest/gtest.h>

#include <string>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"

namespace kvc {
namespace {

using testkit::StackedGemm;
using testkit::StackedRun;
using testkit::VerdictKind;

const cases::EligibilityScenario& scenario(StackedIneligibility reason) {
  for (const cases::EligibilityScenario& s : cases::stacked_eligibility_matrix())
    if (s.reason == reason) return s;
  ADD_FAILURE() << "the registry has no scenario for " << ineligibility_name(reason);
  return cases::stacked_eligibility_matrix().front();
}

// The oracle's per-layer run, reporting `path`.
StackedRun fake_run(const StackedCtxKvCase& c, StackedPath path) {
  StackedRun r;
  r.name = "fake library AUTO";
  r.pools = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.path = StackedPathRequest::kPerLayer;
  oracle::StackedCtxKvRun run;
  r.status = oracle::stacked_ctx_kv(c, r.pools, o, &run);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  r.projection = run.projection;
  r.path = path;
  return r;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(StackedPathHole, TheStackedPathOnALayerShapeThatDiffersFailsNamingTheLayerAndTheShapes) {
  struct Expect {
    StackedIneligibility reason;
    std::string why;
  };
  for (const Expect& e : {Expect{StackedIneligibility::kHeadDimDiffers,
                                 "head_dim differs at layer 2: head_dim 32 vs "
                                 "layer 0's 64"},
                          Expect{StackedIneligibility::kKvHeadsDiffers,
                                 "kv heads differ at layer 3: 3 kv heads vs "
                                 "layer 0's 2"},
                          Expect{StackedIneligibility::kDtypeDiffers,
                                 "dtype differs at layer 1: float16 weights vs "
                                 "layer 0's bfloat16"}}) {
    const StackedCtxKvCase c = cases::build_eligibility_case(scenario(e.reason));
    // No required path: the check holds for any call, not only the fallback check's.
    const testkit::Verdict v =
        testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {fake_run(c, StackedPath::kStacked)}, "ctest");
    EXPECT_EQ(v.kind, VerdictKind::kWrongPath) << v.report;
    EXPECT_TRUE(contains(v.report, "fake library AUTO took the stacked path on a model ineligible for it: " + e.why))
        << v.report;
    EXPECT_EQ(testkit::stacked_path_hole(c, fake_run(c, StackedPath::kPerLayer)), "");
  }
}

TEST(StackedPathHole, ARequiredPathDoesNotHideTheHolesLine) {
  const StackedCtxKvCase c = cases::build_eligibility_case(scenario(StackedIneligibility::kHeadDimDiffers));
  StackedRun run = fake_run(c, StackedPath::kStacked);
  run.required_path = StackedPath::kPerLayer;
  const testkit::Verdict v = testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {run}, "ctest");
  EXPECT_EQ(v.kind, VerdictKind::kWrongPath) << v.report;
  EXPECT_TRUE(contains(v.report, "took the stacked path on a model ineligible for it")) << v.report;
}

TEST(StackedPathHole, TheStackedPathOnAnEligibleModelAndThePerLayerPathOnAnIneligibleOnePass) {
  testkit::StackedCtxKvShape shape = cases::upstream_stacked_shape(DType::kBF16, false);
  const StackedCtxKvCase eligible = testkit::make_stacked_ctx_kv_case(shape);
  EXPECT_EQ(testkit::judge_stacked(eligible, {}, StackedGemm::kExactOrder, {fake_run(eligible, StackedPath::kStacked)},
                                   "ctest")
                .kind,
            VerdictKind::kMatch);
  const StackedCtxKvCase ineligible = cases::build_eligibility_case(scenario(StackedIneligibility::kKvHeadsDiffers));
  const testkit::Verdict v = testkit::judge_stacked(ineligible, {}, StackedGemm::kExactOrder,
                                                    {fake_run(ineligible, StackedPath::kPerLayer)}, "ctest");
  EXPECT_EQ(v.kind, VerdictKind::kMatch) << v.report;
}

}  // namespace
}  // namespace kvc
