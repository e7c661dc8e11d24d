// stacked_ctx_kv_eligibility_test.cpp: eligibility of the stacked path, the fallback, the param cache.
//
// - Each scenario of the registry (the upstream three: a quantized layer 1 of 3, eps 1e-6 vs 1e-5,
//   a bias on layer 0 only; ours: head_dim, kv heads, dtype and rotary table differing at one
//   layer) is ineligible for the reason and at the layer it was built with; AUTO then runs the
//   per-layer path with the per-layer bytes, and forcing the stacked path is rejected (E157) with
//   nothing written. Catches an eligibility walk that stops at layer 0, a check that is missing,
//   eps compared with a tolerance, a fallback that writes different bytes.
// - Exactness of the comparisons: eps one ulp apart is ineligible; equal tables in different
//   tensors are eligible, one table element one ulp off is not; a caller's identity comparison
//   (the kernel wrapper's) can only make a model ineligible.
// - The stacked-parameter cache: built once, rebuilt when any layer's KV rows, bias, K-norm
//   weight, eps or table change, and not for bytes it does not use (Q rows). A cache that trusts
//   itself (the original's "frozen weights" assumption, ParamCacheCheck::kTrustCache) runs stale
//   parameters after a weight update, and the stacked-equals-per-layer comparison catches it,
//   naming the updated layer.
#include <gtest/gtest.h>

#include <cmath>

#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"
#include "testkit/backends/forced_stacked_path.h"

namespace kvc {
namespace {

using cases::EligibilityScenario;

StackedCtxKvOutputs run(const StackedCtxKvCase& c, StackedPathRequest path, oracle::StackedParamCache* cache = nullptr,
                        StackedPath* taken = nullptr) {
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.path = path;
  o.cache = cache;
  oracle::StackedCtxKvRun r;
  const Status s = oracle::stacked_ctx_kv(c, out, o, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (taken != nullptr) *taken = r.path;
  return out;
}

class Eligibility : public ::testing::TestWithParam<EligibilityScenario> {};

TEST_P(Eligibility, ReasonAndLayerAreReported) {
  const EligibilityScenario& s = GetParam();
  const StackedCtxKvCase c = cases::build_eligibility_case(s);
  ASSERT_TRUE(validate_stacked_ctx_kv(c, ValidationLevel::kStrict).ok())
      << validate_stacked_ctx_kv(c, ValidationLevel::kStrict).ToString();
  const StackedEligibility e = stacked_ctx_kv_eligibility(c);
  EXPECT_FALSE(e.eligible());
  EXPECT_EQ(e.reason, s.reason) << e.to_string();
  EXPECT_EQ(e.layer, s.layer) << e.to_string();
  EXPECT_NE(e.to_string().find("layer " + std::to_string(s.layer)), std::string::npos) << e.to_string();
  // The same model without the defect is eligible: the scenario breaks exactly one condition.
  EXPECT_TRUE(stacked_ctx_kv_eligibility(testkit::make_stacked_ctx_kv_case(s.shape)).eligible());
}

TEST_P(Eligibility, FallbackWritesThePerLayerBytes) {
  const StackedCtxKvCase c = cases::build_eligibility_case(GetParam());
  StackedPath taken = StackedPath::kStacked;
  const StackedCtxKvOutputs automatic = run(c, StackedPathRequest::kAuto, nullptr, &taken);
  EXPECT_EQ(taken, StackedPath::kPerLayer);
  const StackedCtxKvOutputs per_layer = run(c, StackedPathRequest::kPerLayer);
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, per_layer, automatic);
  EXPECT_TRUE(r.equal()) << testkit::format_stacked_report(c, r, "per-layer", "auto", "");
}

TEST_P(Eligibility, ForcedStackedPathIsRejectedAndWritesNothing) {
  const testkit::ForcedStackedRun r =
      testkit::run_oracle_forcing_stacked_path(cases::build_eligibility_case(GetParam()));
  EXPECT_EQ(r.status.code, ErrorCode::kStackedPathIneligible) << r.status.ToString();
  EXPECT_NE(r.status.detail.find(ineligibility_name(GetParam().reason)), std::string::npos) << r.status.ToString();
  EXPECT_TRUE(r.pools_unchanged) << "a rejected call wrote into the pools";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Eligibility, ::testing::ValuesIn(cases::stacked_eligibility_matrix()),
                         [](const ::testing::TestParamInfo<EligibilityScenario>& p) { return p.param.name; });

TEST(EligibilityComparisons, EpsIsComparedExactly) {
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kF16, false));
  ASSERT_TRUE(stacked_ctx_kv_eligibility(c).eligible());
  c.layers[3].eps = std::nextafter(c.layers[3].eps, 1.0f);
  const StackedEligibility e = stacked_ctx_kv_eligibility(c);
  EXPECT_EQ(e.reason, StackedIneligibility::kEpsDiffers);
  EXPECT_EQ(e.layer, 3);
}

TEST(EligibilityComparisons, RotaryTablesAreComparedByContent) {
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kBF16, true));
  // Every layer holds its own copy of the same table: eligible.
  ASSERT_TRUE(stacked_ctx_kv_eligibility(c).eligible());
  // One element of layer 2's table one ulp off: ineligible at layer 2.
  const float v = c.layers[2].cos_sin.load<float>(77);
  c.layers[2].cos_sin.store<float>(77, std::nextafter(v, 2.0f));
  const StackedEligibility e = stacked_ctx_kv_eligibility(c);
  EXPECT_EQ(e.reason, StackedIneligibility::kRotaryTableDiffers);
  EXPECT_EQ(e.layer, 2);
}

TEST(EligibilityComparisons, AnIdentityComparisonCanOnlyRejectMore) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kBF16, false));
  const StackedEligibility e = stacked_ctx_kv_eligibility(c, [](int layer) { return layer != 1; });
  EXPECT_EQ(e.reason, StackedIneligibility::kRotaryTableDiffers);
  EXPECT_EQ(e.layer, 1);
  EXPECT_NE(e.detail.find("another tensor"), std::string::npos) << e.detail;
}

TEST(EligibilityComparisons, ResolvedPathFollowsTheRequest) {
  const StackedEligibility yes;
  const StackedEligibility no{StackedIneligibility::kEpsDiffers, 1, "layer 1: eps"};
  const FusedEligibility fused_yes;
  const FusedEligibility fused_no{FusedIneligibility::kBias, 0, "layer 0: a QKV bias"};
  StackedPath p = StackedPath::kPerLayer;
  // AUTO: fused if eligible, else stacked if eligible, else per layer (docs/contract.md §4.5).
  ASSERT_TRUE(resolve_stacked_path(StackedPathRequest::kAuto, yes, fused_yes, &p).ok());
  EXPECT_EQ(p, StackedPath::kFused);
  ASSERT_TRUE(resolve_stacked_path(StackedPathRequest::kAuto, yes, fused_no, &p).ok());
  EXPECT_EQ(p, StackedPath::kStacked);
  ASSERT_TRUE(resolve_stacked_path(StackedPathRequest::kAuto, no, fused_no, &p).ok());
  EXPECT_EQ(p, StackedPath::kPerLayer);
  ASSERT_TRUE(resolve_stacked_path(StackedPathRequest::kPerLayer, yes, fused_yes, &p).ok());
  EXPECT_EQ(p, StackedPath::kPerLayer);
  ASSERT_TRUE(resolve_stacked_path(StackedPathRequest::kStacked, yes, fused_yes, &p).ok());
  EXPECT_EQ(p, StackedPath::kStacked);
  ASSERT_TRUE(resolve_stacked_path(StackedPathRequest::kFused, no, fused_yes, &p).ok());
  EXPECT_EQ(p, StackedPath::kFused) << "the fused path has its own eligibility";
  EXPECT_EQ(resolve_stacked_path(StackedPathRequest::kStacked, no, fused_yes, &p).code,
            ErrorCode::kStackedPathIneligible);
  const Status forced = resolve_stacked_path(StackedPathRequest::kFused, yes, fused_no, &p);
  EXPECT_EQ(forced.code, ErrorCode::kStackedPathIneligible);
  EXPECT_NE(forced.detail.find("fused path: bias at layer 0"), std::string::npos) << forced.detail;
}

// ---- the stacked-parameter cache ------------------------------------------------------------------

StackedCtxKvCase cache_case() {
  testkit::StackedCtxKvShape s = cases::upstream_stacked_shape(DType::kBF16, true);
  s.skip_every = 4;
  return testkit::make_stacked_ctx_kv_case(s);
}

// One element of layer `layer`'s K rows (the first K row, column `column`) moved by one ulp.
void update_weight(StackedCtxKvCase& c, int layer, std::int64_t column) {
  StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(layer)];
  const std::int64_t element = l.q_size * c.hidden() + column;
  l.qkv_weight.store<std::uint16_t>(element, static_cast<std::uint16_t>(l.qkv_weight.load<std::uint16_t>(element) + 1));
}

TEST(StackedParamCache, BuildsOnceWhileTheWeightsStayTheSame) {
  const StackedCtxKvCase c = cache_case();
  oracle::StackedParamCache cache;
  const StackedCtxKvOutputs first = run(c, StackedPathRequest::kStacked, &cache);
  const StackedCtxKvOutputs second = run(c, StackedPathRequest::kStacked, &cache);
  EXPECT_EQ(cache.builds(), 1);
  EXPECT_EQ(first.k_pools, second.k_pools);
  EXPECT_EQ(first.v_pools, second.v_pools);
}

TEST(StackedParamCache, RebuildsWhenAnyParameterItUsesChanges) {
  StackedCtxKvCase c = cache_case();
  oracle::StackedParamCache cache;
  run(c, StackedPathRequest::kStacked, &cache);
  std::int64_t builds = cache.builds();
  struct Change {
    const char* what;
    std::function<void(StackedCtxKvCase&)> apply;
  };
  const Change changes[] = {
      {"a K weight of layer 2", [](StackedCtxKvCase& x) { update_weight(x, 2, 5); }},
      {"a V weight of layer 3",
       [](StackedCtxKvCase& x) { update_weight(x, 3, x.layers[3].kv_size() * x.hidden() + 7); }},
      {"a bias of layer 1",
       [](StackedCtxKvCase& x) {
         HostTensor& b = x.layers[1].qkv_bias;
         const std::int64_t e = x.layers[1].q_size + 3;
         b.store<std::uint16_t>(e, static_cast<std::uint16_t>(b.load<std::uint16_t>(e) ^ 1));
       }},
      {"a K-norm weight of layer 0",
       [](StackedCtxKvCase& x) {
         HostTensor& w = x.layers[0].k_norm_weight;
         w.store<std::uint16_t>(9, static_cast<std::uint16_t>(w.load<std::uint16_t>(9) ^ 1));
       }},
      {"every layer's eps",
       [](StackedCtxKvCase& x) {
         for (StackedCtxKvLayer& l : x.layers) l.eps = 2e-6f;
       }},
      {"every layer's table",
       [](StackedCtxKvCase& x) {
         for (StackedCtxKvLayer& l : x.layers) l.cos_sin.store<float>(3, 0.25f);
       }},
  };
  for (const Change& change : changes) {
    change.apply(c);
    ASSERT_TRUE(stacked_ctx_kv_eligibility(c).eligible()) << change.what;
    const StackedCtxKvOutputs cached = run(c, StackedPathRequest::kStacked, &cache);
    EXPECT_EQ(cache.builds(), ++builds) << "changing " << change.what << " must rebuild the stacked parameters";
    const StackedCtxKvOutputs per_layer = run(c, StackedPathRequest::kPerLayer);
    const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, per_layer, cached);
    EXPECT_TRUE(r.equal()) << "after changing " << change.what << ":\n"
                           << testkit::format_stacked_report(c, r, "per-layer", "stacked (cached)", "");
  }
  // Q rows are not part of the stacked parameters: changing them rebuilds nothing.
  c.layers[1].qkv_weight.store<std::uint16_t>(0, 0x1234);
  run(c, StackedPathRequest::kStacked, &cache);
  EXPECT_EQ(cache.builds(), builds);
}

TEST(StackedParamCache, AStaleCacheIsCaughtByTheParityComparison) {
  StackedCtxKvCase c = cache_case();
  oracle::StackedParamCache trusting(oracle::ParamCacheCheck::kTrustCache);
  run(c, StackedPathRequest::kStacked, &trusting);
  // A weight update of layer 2 (an RL refit, a LoRA swap) that the trusting cache never sees.
  for (std::int64_t column = 0; column < c.hidden(); ++column) update_weight(c, 2, column);
  const StackedCtxKvOutputs stale = run(c, StackedPathRequest::kStacked, &trusting);
  EXPECT_EQ(trusting.builds(), 1) << "the planted cache must not have noticed";
  const StackedCtxKvOutputs per_layer = run(c, StackedPathRequest::kPerLayer);
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, per_layer, stale);
  ASSERT_FALSE(r.equal()) << "a stale stacked weight must change the bytes";
  std::printf("%s", testkit::format_stacked_report(c, r, "per-layer", "stacked (stale cache)", "").c_str());
  for (const auto& [cls, n] : r.count_by_class)
    EXPECT_EQ(cls.rfind("layer 2 ", 0), 0u) << "only layer 2 changed, yet " << n << " mismatches in " << cls;
  // The checking cache, on the same sequence, rebuilds and matches.
  StackedCtxKvCase fresh = cache_case();
  oracle::StackedParamCache checking;
  run(fresh, StackedPathRequest::kStacked, &checking);
  for (std::int64_t column = 0; column < fresh.hidden(); ++column) update_weight(fresh, 2, column);
  EXPECT_TRUE(testkit::diff_stacked_pools(fresh, run(fresh, StackedPathRequest::kPerLayer),
                                          run(fresh, StackedPathRequest::kStacked, &checking))
                  .equal());
  EXPECT_EQ(checking.builds(), 2);
}

}  // namespace
}  // namespace kvc
