// stacked_ctx_kv_fused_test.cpp: the stacked op's fused path (docs/contract.md §4.5, version 3):
// its eligibility, condition by condition, and the oracle's fused path against the other two.
//
// - Fused eligibility: a fused-eligible model (bf16, no bias, 3 layers) broken at one layer for
//   each condition (quantized, fp16 weights, fp16 x and pools, a bias, another head_dim, another
//   kv size, another rotary table, another eps) is ineligible for exactly that reason at exactly
//   that layer, and the reason's text names the layer. Catches a walk that stops at layer 0, a
//   condition that is missing or checked against the wrong layer, eps compared with a tolerance.
// - AUTO takes the fused path on the eligible model and the stacked path on each broken model that
//   is still stacked-eligible; forcing the fused path on a broken one is E157 ("fused path: ...")
//   with nothing written. Catches an AUTO that ignores the fused path or takes it when ineligible.
// - The fused path writes the per-layer path's bytes on every fused-eligible registry case
//   (stacked_ctx_kv_oracle_test.cpp checks the families path against path); here the one
//   difference a fused path could introduce that those cases cannot show: the eligible models
//   share one eps and table, and the fused path reads layer 0's. A fused run whose layer 1 eps or
//   table is changed behind the eligibility check (a model called with another eps at layer 1)
//   writes layer 0's eps's bytes. Catches a fused path that reads each layer's own eps.
#include <gtest/gtest.h>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_fused.h"
#include "kvc/stacked_fused_eligibility.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"

namespace kvc {
namespace {

testkit::StackedCtxKvShape eligible_shape() {
  testkit::StackedCtxKvShape s;
  s.layers = 3;
  s.tokens = 5;
  s.hidden = 32;
  s.q_heads = 1;
  s.kv_heads = 2;
  s.head_dim = 16;
  s.dtype = DType::kBF16;
  s.bias = false;
  s.max_pos = 16;
  s.skip_every = 3;
  s.seed = 11;
  return s;
}

struct Broken {
  const char* name;
  FusedIneligibility reason;
  int layer;
  bool stacked_eligible;  // the broken model may still take the stacked path
  std::function<void(StackedCtxKvCase&, const testkit::StackedCtxKvShape&)> apply;
};

std::vector<Broken> broken_models() {
  using R = FusedIneligibility;
  using S = StackedIneligibility;
  const auto make = [](S reason, int layer) {
    return [reason, layer](StackedCtxKvCase& c, const testkit::StackedCtxKvShape& s) {
      testkit::make_ineligible(c, s, reason, layer);
    };
  };
  return {
      {"QuantizedLayer2", R::kQuantizedLayer, 2, false, make(S::kQuantizedLayer, 2)},
      {"Fp16WeightsAtLayer1", R::kWeightNotBf16, 1, false, make(S::kDtypeDiffers, 1)},
      {"Fp16Pools", R::kPoolsNotBf16, 0, true,
       [](StackedCtxKvCase& c, const testkit::StackedCtxKvShape& s) {
         // x and the pools fp16, the weights bf16 (mixed dtypes are valid): only the pools fail.
         testkit::StackedCtxKvShape h = s;
         h.dtype = DType::kF16;
         const StackedCtxKvCase f = testkit::make_stacked_ctx_kv_case(h);
         c.x = f.x;
         for (std::size_t i = 0; i < c.layers.size(); ++i) {
           c.layers[i].k_pool = f.layers[i].k_pool;
           c.layers[i].v_pool = f.layers[i].v_pool;
         }
       }},
      {"BiasOnEveryLayer", R::kBias, 0, true,
       [](StackedCtxKvCase& c, const testkit::StackedCtxKvShape& s) {
         testkit::StackedCtxKvShape b = s;
         b.bias = true;
         c = testkit::make_stacked_ctx_kv_case(b);
       }},
      {"HeadDimDiffersAtLayer2", R::kHeadDimDiffers, 2, false, make(S::kHeadDimDiffers, 2)},
      {"KvSizeDiffersAtLayer1", R::kKvSizeDiffers, 1, false, make(S::kKvHeadsDiffers, 1)},
      {"RotaryTableDiffersAtLayer2", R::kRotaryTableDiffers, 2, false, make(S::kRotaryTableDiffers, 2)},
      {"EpsDiffersAtLayer1", R::kEpsDiffers, 1, false, make(S::kEpsDiffers, 1)},
  };
}

class FusedEligibilityCondition : public ::testing::TestWithParam<Broken> {};

TEST_P(FusedEligibilityCondition, NamesTheConditionAndTheLayer) {
  const testkit::StackedCtxKvShape s = eligible_shape();
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s);
  ASSERT_TRUE(stacked_fused_eligibility(c).eligible()) << stacked_fused_eligibility(c).to_string();
  GetParam().apply(c, s);
  ASSERT_TRUE(validate_stacked_ctx_kv(c, ValidationLevel::kStrict).ok()) << "the broken model must stay valid";
  const FusedEligibility e = stacked_fused_eligibility(c);
  EXPECT_EQ(e.reason, GetParam().reason) << e.to_string();
  EXPECT_EQ(e.layer, GetParam().layer) << e.to_string();
  EXPECT_NE(e.to_string().find("layer " + std::to_string(GetParam().layer)), std::string::npos) << e.to_string();
  EXPECT_NE(e.to_string().find(fused_ineligibility_name(GetParam().reason)), std::string::npos) << e.to_string();
}

TEST_P(FusedEligibilityCondition, AutoFallsBackAndAForcedFusedPathIsE157WritingNothing) {
  const testkit::StackedCtxKvShape s = eligible_shape();
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s);
  GetParam().apply(c, s);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvRun run;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, out, {}, &run).ok());
  EXPECT_EQ(run.path, GetParam().stacked_eligible ? StackedPath::kStacked : StackedPath::kPerLayer)
      << path_name(run.path);
  StackedCtxKvOutputs forced = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.path = StackedPathRequest::kFused;
  const Status st = oracle::stacked_ctx_kv(c, forced, o);
  EXPECT_EQ(st.code, ErrorCode::kStackedPathIneligible) << st.ToString();
  EXPECT_NE(st.detail.find("fused path: "), std::string::npos) << st.detail;
  EXPECT_EQ(forced.k_pools, testkit::make_stacked_outputs(c).k_pools);
  EXPECT_EQ(forced.v_pools, testkit::make_stacked_outputs(c).v_pools);
}

INSTANTIATE_TEST_SUITE_P(Conditions, FusedEligibilityCondition, ::testing::ValuesIn(broken_models()),
                         [](const ::testing::TestParamInfo<Broken>& p) { return p.param.name; });

TEST(FusedEligibility, TheEligibleModelTakesTheFusedPathUnderAuto) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(eligible_shape());
  StackedCtxKvOutputs a = testkit::make_stacked_outputs(c), p = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvRun run;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, a, {}, &run).ok());
  EXPECT_EQ(run.path, StackedPath::kFused);
  oracle::StackedCtxKvOptions o;
  o.path = StackedPathRequest::kPerLayer;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, p, o).ok());
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, p, a);
  EXPECT_TRUE(r.equal()) << testkit::format_stacked_report(c, r, "per-layer", "fused", "");
}

TEST(FusedEligibility, AnIdentityComparisonOfTablesCanOnlyRejectMore) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(eligible_shape());
  const FusedEligibility e = stacked_fused_eligibility(c, [](int layer) { return layer != 2; });
  EXPECT_EQ(e.reason, FusedIneligibility::kRotaryTableDiffers);
  EXPECT_EQ(e.layer, 2);
  EXPECT_NE(e.detail.find("another tensor"), std::string::npos) << e.detail;
}

TEST(FusedPath, ReadsLayer0sEpsAsTheDispatchItModelsDoes) {
  // Run the fused path directly on a model whose layer 1 eps differs (the eligibility check would
  // refuse it): layer 1's bytes are those of the model with layer 0's eps everywhere.
  const testkit::StackedCtxKvShape s = eligible_shape();
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s);
  StackedCtxKvCase other_eps = c;
  other_eps.layers[1].eps = 0.5f;  // large enough to move every normed value
  std::vector<std::uint16_t> projection(static_cast<std::size_t>(c.num_tokens() * c.projection_width()));
  StackedCtxKvOutputs fused = testkit::make_stacked_outputs(c);
  oracle::run_stacked_fused(other_eps, {}, projection, fused);
  StackedCtxKvOutputs per_layer = testkit::make_stacked_outputs(c), per_layer_other = per_layer;
  oracle::StackedCtxKvOptions o;
  o.path = StackedPathRequest::kPerLayer;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, per_layer, o).ok());
  ASSERT_TRUE(oracle::stacked_ctx_kv(other_eps, per_layer_other, o).ok());
  EXPECT_EQ(fused.k_pools, per_layer.k_pools);
  EXPECT_NE(per_layer_other.k_pools[1], per_layer.k_pools[1]) << "eps 0.5 must change layer 1's K";
}

}  // namespace
}  // namespace kvc
