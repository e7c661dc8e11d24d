// stacked_policy_matrix_test.cpp: the policy-sensitive stacked shapes (cases::stacked_policy_matrix())
// tell every stacked policy alternative the oracle computes from the contract's (docs/contract.md
// §6.2.1): the oracle's epilogue under each one-policy profile writes other K bytes than under the
// contract, or (slot 0 reserved) the case as built is E159. This is what makes the mislabelled
// policy doubles (testkit/doubles/stacked_policy.cpp, declaring the contract) fail on a GPU, not
// chance. The approximate reciprocal and the unspecified reduction are budgets around the
// contract's r, not orders the oracle runs: for them the shape shows that r moved by one fp32 ulp
// (the least an approximate sqrt or another order moves it, where it moves it) changes K bytes.
// Catches: a shape too small for a policy to show (a double declaring the contract while running
// the CUDA rope pair would pass every check); a shape judged on a sample only.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_k_norm.h"
#include "kvc/oracle/storage16.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/cases/stacked_ctx_kv_registry.h"

namespace kvc {
namespace {

// K heads whose stored bytes change when r moves one fp32 ulp up from the contract's (layer 0).
int heads_a_moved_r_changes(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& projection) {
  const StackedCtxKvLayer& l = c.layers[0];
  const DType d = c.storage_dtype();
  std::vector<float> w(static_cast<std::size_t>(l.head_dim));
  for (std::int64_t i = 0; i < l.head_dim; ++i)
    w[static_cast<std::size_t>(i)] = oracle::widen16(l.k_norm_weight.load<std::uint16_t>(i), l.dtype());
  int changed = 0;
  for (std::int64_t t = 0; t < c.num_tokens(); ++t)
    for (std::int64_t h = 0; h < l.num_kv_heads; ++h) {
      const std::uint16_t* k = projection.data() + t * c.projection_width() + h * l.head_dim;
      std::vector<float> e(static_cast<std::size_t>(l.head_dim));
      for (std::int64_t i = 0; i < l.head_dim; ++i) e[static_cast<std::size_t>(i)] = oracle::widen16(k[i], d);
      const float r = oracle::k_norm_reciprocal(
          oracle::k_norm_sum_of_squares(e.data(), l.head_dim, KNormReduction::kSequential), l.head_dim, l.eps);
      std::vector<float> cs(static_cast<std::size_t>(l.head_dim));
      for (std::int64_t i = 0; i < l.head_dim; ++i)
        cs[static_cast<std::size_t>(i)] = l.cos_sin.load<float>(c.positions.load<std::int64_t>(t) * l.head_dim + i);
      std::vector<std::uint16_t> exact(k, k + l.head_dim), moved(k, k + l.head_dim);
      oracle::k_norm_rope_head_with_r(exact.data(), l.head_dim, w.data(), r, cs.data(), d, StackedRope::kContract);
      oracle::k_norm_rope_head_with_r(moved.data(), l.head_dim, w.data(), std::nextafter(r, 2 * r), cs.data(), d,
                                      StackedRope::kContract);
      changed += exact != moved ? 1 : 0;
    }
  return changed;
}

TEST(StackedPolicyMatrix, EveryAlternativeChangesBytesOnEveryToken) {
  ASSERT_FALSE(cases::stacked_policy_matrix().empty());
  for (const cases::StackedSpec& spec : cases::stacked_policy_matrix()) {
    EXPECT_FALSE(spec.sampled()) << spec.name;
    const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(spec.shape);
    StackedCtxKvOutputs contract = testkit::make_stacked_outputs(c);
    oracle::StackedCtxKvRun run;
    ASSERT_TRUE(oracle::stacked_ctx_kv(c, contract, {}, &run).ok()) << spec.name;
    const auto differs_under = [&](const StackedProfile& p) {
      StackedCtxKvOutputs other = testkit::make_stacked_outputs(c);
      EXPECT_TRUE(oracle::stacked_ctx_kv_epilogue(c, run.projection, other, p).ok()) << stacked_profile_name(p);
      return other.k_pools != contract.k_pools;
    };
    EXPECT_TRUE(differs_under(with_alternative({}, StackedPolicy::kRope, 1))) << spec.name << " rope";
    EXPECT_TRUE(differs_under(with_alternative({}, StackedPolicy::kReduction, 1))) << spec.name << " lane tree";
    oracle::StackedCtxKvOptions reserved;
    reserved.profile.cache_loc = CacheLocPolicy::kSlotZeroReserved;
    StackedCtxKvOutputs rejected = testkit::make_stacked_outputs(c);
    EXPECT_EQ(oracle::stacked_ctx_kv(c, rejected, reserved).code, ErrorCode::kStackedNegativeCacheLoc) << spec.name;
    EXPECT_GT(heads_a_moved_r_changes(c, run.projection), 0) << spec.name << ": r moved by one ulp changes nothing";
  }
}

}  // namespace
}  // namespace kvc
