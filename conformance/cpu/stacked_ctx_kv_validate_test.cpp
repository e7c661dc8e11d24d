// stacked_ctx_kv_validate_test.cpp: every rule of the stacked context-KV op, broken alone.
//
// Each breaker of testkit::stacked_rule_breakers() applied to the small valid case: the oracle
// rejects with the rule's code at the rule's level (and at strict), and the pools keep every byte;
// a strict-only rule is accepted at the contract level. The same again under the slot-0-reserved
// cache_loc policy (the case laid out for it, plus its E159 row). E157 for the fused path is a breaker
// row that asks for that path; E157 for the stacked path (forced on an ineligible model) and E158
// (stacked parameters of another shape) have their own negative tests here. A last test fails when a
// code of this op has no negative test at all.
#include <gtest/gtest.h>

#include <set>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "rejected_at_its_level.h"
#include "testkit/backends/forced_stacked_path.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"

namespace kvc {
namespace {

using testkit::StackedRuleBreaker;

class StackedInvalidInput : public ::testing::TestWithParam<StackedRuleBreaker> {};

TEST_P(StackedInvalidInput, RejectedWithItsCodeAndNothingWritten) {
  const StackedRuleBreaker& b = GetParam();
  StackedCtxKvCase c = testkit::small_stacked_case();
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, out).ok()) << "the base case must be valid";
  out = testkit::make_stacked_outputs(c);
  b.apply(c, out);
  expect_rejected_at_its_level(
      b.code, b.level, out,
      [&](ValidationLevel level, StackedCtxKvOutputs& o) {
        oracle::StackedCtxKvOptions options;
        options.level = level;
        options.path = b.path;
        return oracle::stacked_ctx_kv(c, o, options);
      },
      [](const StackedCtxKvOutputs& before, const StackedCtxKvOutputs& o) {
        return o.k_pools != before.k_pools ? "a K pool" : o.v_pools != before.v_pools ? "a V pool" : "";
      });
}

INSTANTIATE_TEST_SUITE_P(Rules, StackedInvalidInput, ::testing::ValuesIn(testkit::stacked_rule_breakers()),
                         [](const ::testing::TestParamInfo<StackedRuleBreaker>& p) { return p.param.name; });

// The same table under the slot-0-reserved cache_loc policy, on the base case laid out for it,
// with its own E159 row: what a library declaring that policy is held to.
class StackedInvalidInputSlotZeroReserved : public ::testing::TestWithParam<StackedRuleBreaker> {};

TEST_P(StackedInvalidInputSlotZeroReserved, RejectedWithItsCodeAndNothingWritten) {
  const StackedRuleBreaker& b = GetParam();
  StackedCtxKvCase c = testkit::small_stacked_case(CacheLocPolicy::kSlotZeroReserved);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions reserved;
  reserved.profile.cache_loc = CacheLocPolicy::kSlotZeroReserved;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, out, reserved).ok()) << "the base case must be valid under the policy";
  out = testkit::make_stacked_outputs(c);
  b.apply(c, out);
  expect_rejected_at_its_level(
      b.code, b.level, out,
      [&](ValidationLevel level, StackedCtxKvOutputs& o) {
        oracle::StackedCtxKvOptions options = reserved;
        options.level = level;
        options.path = b.path;
        return oracle::stacked_ctx_kv(c, o, options);
      },
      [](const StackedCtxKvOutputs& before, const StackedCtxKvOutputs& o) {
        return o.k_pools != before.k_pools ? "a K pool" : o.v_pools != before.v_pools ? "a V pool" : "";
      });
}

INSTANTIATE_TEST_SUITE_P(Rules, StackedInvalidInputSlotZeroReserved,
                         ::testing::ValuesIn(testkit::stacked_rule_breakers(CacheLocPolicy::kSlotZeroReserved)),
                         [](const ::testing::TestParamInfo<StackedRuleBreaker>& p) { return p.param.name; });

TEST(StackedRequests, ForcingTheStackedPathOnAnIneligibleModelIsE157) {
  StackedCtxKvCase c = testkit::small_stacked_case();
  c.layers[1].eps = 1e-5f;
  const testkit::ForcedStackedRun r = testkit::run_oracle_forcing_stacked_path(c);
  EXPECT_EQ(r.status.code, ErrorCode::kStackedPathIneligible) << r.status.ToString();
  EXPECT_TRUE(r.pools_unchanged) << "a rejected call wrote into the pools";
}

TEST(StackedRequests, StackedParametersOfAnotherShapeAreE158) {
  const StackedCtxKvCase c = testkit::small_stacked_case();
  struct Defect {
    const char* what;
    std::function<void(oracle::StackedParams&)> apply;
  };
  const Defect defects[] = {
      {"one row short",
       [](oracle::StackedParams& p) { p.weight.resize(p.weight.size() - static_cast<std::size_t>(p.hidden)); }},
      {"no bias", [](oracle::StackedParams& p) { p.bias.clear(); }},
      {"another dtype", [](oracle::StackedParams& p) { p.dtype = DType::kF16; }},
      {"one layer fewer", [](oracle::StackedParams& p) { p.layers -= 1; }},
  };
  for (const Defect& d : defects) {
    oracle::StackedParams p = oracle::build_stacked_params(c);
    d.apply(p);
    StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
    const StackedCtxKvOutputs before = out;
    oracle::StackedCtxKvOptions o;
    o.path = StackedPathRequest::kStacked;
    o.params = &p;
    const Status s = oracle::stacked_ctx_kv(c, out, o);
    EXPECT_EQ(s.code, ErrorCode::kStackedParamsMismatch) << d.what << ": " << s.ToString();
    EXPECT_EQ(out.k_pools, before.k_pools) << d.what;
    EXPECT_EQ(out.v_pools, before.v_pools) << d.what;
  }
  // The right parameters are accepted and give the per-layer bytes.
  const oracle::StackedParams good = oracle::build_stacked_params(c);
  StackedCtxKvOutputs given = testkit::make_stacked_outputs(c), per_layer = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.path = StackedPathRequest::kStacked;
  o.params = &good;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, given, o).ok());
  o.path = StackedPathRequest::kPerLayer;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, per_layer, o).ok());
  EXPECT_EQ(given.k_pools, per_layer.k_pools);
  EXPECT_EQ(given.v_pools, per_layer.v_pools);
}

TEST(StackedRules, EveryCodeOfTheOpHasANegativeTest) {
  // E159 depends on the declared cache_loc policy: StackedInvalidInputSlotZeroReserved above and
  // stacked_ctx_kv_policies_test.cpp break it.
  std::set<ErrorCode> covered = {ErrorCode::kStackedPathIneligible, ErrorCode::kStackedParamsMismatch,
                                 ErrorCode::kStackedNegativeCacheLoc};
  for (const StackedRuleBreaker& b : testkit::stacked_rule_breakers()) covered.insert(b.code);
  for (ErrorCode code : kAllErrorCodes) {
    if (!is_stacked_ctx_kv_code(code)) continue;
    EXPECT_TRUE(covered.count(code)) << "no negative test for E" << static_cast<int>(code) << " " << error_name(code);
  }
  // The generic codes this op reuses are exercised too.
  EXPECT_TRUE(covered.count(ErrorCode::kTensorMetaInvalid));
  EXPECT_TRUE(covered.count(ErrorCode::kInputTooSmall));
}

TEST(StackedRules, TheOpsCodesAreItsAssignedRanges) {
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedXDtype), 140);
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedParamsMismatch), 158);
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedCommitLensInvalid), 160);
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedCommitLenOutOfRange), 161);
  EXPECT_TRUE(is_stacked_ctx_kv_code(ErrorCode::kStackedCommitLenOutOfRange));
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedPoolSlotsOverlap), 210);
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedPositionOutOfRange), 213);
  EXPECT_EQ(static_cast<int>(ErrorCode::kStackedPoolBufferTooSmall), 310);
  EXPECT_TRUE(is_stacked_ctx_kv_code(ErrorCode::kStackedDuplicateSlot));
  EXPECT_FALSE(is_stacked_ctx_kv_code(ErrorCode::kDuplicateSlot));
  EXPECT_FALSE(is_stacked_ctx_kv_code(ErrorCode::kTensorMetaInvalid));
}

}  // namespace
}  // namespace kvc
