// stacked_profile_test.cpp: the stacked op's policy vocabulary (contract/include/kvc/stacked_profile.h,
// docs/contract.md §6.2.1): the named profiles hold the policies the contract's table gives
// them, every profile's name parses back to it, and malformed specs are refused naming the
// defect. Catches a named profile with a policy swapped (e.g. the fused path's rope taken for the
// CUDA pair), a name that does not round-trip, or a parser that accepts a key twice or an
// unknown value.
#include <gtest/gtest.h>

#include "kvc/stacked_profile.h"

namespace kvc {
namespace {

TEST(StackedProfileNames, NamedProfilesHoldTheirTablesPolicies) {
  const StackedProfile c = contract_stacked_profile();
  EXPECT_EQ(c.rope, StackedRope::kContract);
  EXPECT_EQ(c.reduction, KNormReduction::kSequential);
  EXPECT_EQ(c.reciprocal, KNormReciprocal::kCorrectlyRounded);
  EXPECT_EQ(c.cache_loc, CacheLocPolicy::kNegativeSkipped);
  EXPECT_TRUE(c.k_norm_exact());
  EXPECT_EQ(c, StackedProfile{});

  const StackedProfile stacked = sglang_dspark_stacked_profile();
  EXPECT_EQ(stacked.rope, StackedRope::kCudaFmaPair);
  EXPECT_EQ(stacked.reduction, KNormReduction::kUnspecified);
  EXPECT_EQ(stacked.reciprocal, KNormReciprocal::kCorrectlyRounded);
  EXPECT_EQ(stacked.cache_loc, CacheLocPolicy::kSlotZeroReserved);
  EXPECT_FALSE(stacked.k_norm_exact());

  const StackedProfile fused = sglang_dspark_fused_profile();
  EXPECT_EQ(fused.rope, StackedRope::kContract);
  EXPECT_EQ(fused.reduction, KNormReduction::kLaneTree);
  EXPECT_EQ(fused.reciprocal, KNormReciprocal::kApproximate);
  EXPECT_EQ(fused.cache_loc, CacheLocPolicy::kNegativeSkipped);
  EXPECT_FALSE(fused.k_norm_exact());

  EXPECT_EQ(stacked_profile_name(c), "contract");
  EXPECT_EQ(stacked_profile_name(stacked), "sglang-dspark-stacked");
  EXPECT_EQ(stacked_profile_name(fused), "sglang-dspark-fused");
}

TEST(StackedProfileNames, EveryCombinationRoundTrips) {
  int combinations = 0;
  for (int rope = 0; rope < alternatives_of(StackedPolicy::kRope); ++rope)
    for (int red = 0; red < alternatives_of(StackedPolicy::kReduction); ++red)
      for (int rec = 0; rec < alternatives_of(StackedPolicy::kReciprocal); ++rec)
        for (int loc = 0; loc < alternatives_of(StackedPolicy::kCacheLoc); ++loc) {
          StackedProfile p;
          p = with_alternative(p, StackedPolicy::kRope, rope);
          p = with_alternative(p, StackedPolicy::kReduction, red);
          p = with_alternative(p, StackedPolicy::kReciprocal, rec);
          p = with_alternative(p, StackedPolicy::kCacheLoc, loc);
          std::string error;
          const auto back = parse_stacked_profile(stacked_profile_name(p), &error);
          ASSERT_TRUE(back.has_value()) << stacked_profile_name(p) << ": " << error;
          EXPECT_EQ(*back, p) << stacked_profile_name(p);
          ++combinations;
        }
  EXPECT_EQ(combinations, 24);
  EXPECT_EQ(stacked_profile_name(with_alternative({}, StackedPolicy::kRope, 1)), "rope=fma-pair");
  EXPECT_EQ(describe_stacked_profile(sglang_dspark_fused_profile()),
            "RoPE contraction: contract\nK-norm reduction: lane-tree (contract: sequential)\n"
            "K-norm reciprocal: approx (contract: rn)\ncache_loc: skip-negative\n");
}

TEST(StackedProfileSpecs, ComposedSpecsAndTheirErrors) {
  const auto p = parse_stacked_profile(" sglang-dspark-fused , cache-loc=slot0-reserved ");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->cache_loc, CacheLocPolicy::kSlotZeroReserved);
  EXPECT_EQ(p->reduction, KNormReduction::kLaneTree);
  const auto q = parse_stacked_profile("reduction=unspecified,reciprocal=approx");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->reduction, KNormReduction::kUnspecified);
  EXPECT_EQ(q->reciprocal, KNormReciprocal::kApproximate);
  EXPECT_EQ(q->rope, StackedRope::kContract);

  const std::pair<const char*, const char*> bad[] = {
      {"", "empty"},
      {"vllm", "unknown stacked profile 'vllm'"},
      {"rope=fma-pair,sglang-dspark-fused", "may only come first"},
      {"rope=fma-pair,rope=contract", "given twice"},
      {"reduction=tree", "unknown alternative 'tree'"},
      {"clamp=sglang", "unknown stacked policy 'clamp'"},
  };
  for (const auto& [spec, why] : bad) {
    std::string error;
    EXPECT_FALSE(parse_stacked_profile(spec, &error).has_value()) << spec;
    EXPECT_NE(error.find(why), std::string::npos) << spec << ": " << error;
  }
}

}  // namespace
}  // namespace kvc
