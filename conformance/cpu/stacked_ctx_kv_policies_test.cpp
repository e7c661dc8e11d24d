// stacked_ctx_kv_policies_test.cpp: the stacked oracle under each declared policy
// (docs/contract.md §4.5, §6.2.1), against expectations computed here, not by the oracle:
// - RoPE: a bf16 pair whose second output is 0xbc53 under the contract's pattern and 0xbc54 under
//   the CUDA fma pair, both derived in fp64 with explicit rounding (TwoSum proves every fp64 sum
//   exact, so one float rounding is the fma's). Catches an fma pair that fuses the other product,
//   or a rope policy the oracle ignores.
// - K-norm reduction: one square of 2^24 and 63 squares of 1 sum to 2^24 sequentially (every +1
//   is a tie to even) and to 2^24 + 62 over the lane tree (worked by hand below). Catches a lane
//   tree that is sequential, strided instead of contiguous, or another butterfly.
// - The mean with a head_dim that is no power of two (96): fma(S, fl(1/96), eps) is the contract's
//   and differs from fl(fl(S/96) + eps) at the S found here. Catches a mean taken as a division.
// - cache_loc: slot 0 reserved leaves slot 0's bytes as they were in every pool and writes every
//   other slot as the contract does; a negative entry is E159 with nothing written (skipped under
//   the contract's policy); tokens at slot 0 are no duplicates. Catches a store that writes slot
//   0, a negative index taken as a skip, or E159 raised under the contract's policy.
// - The default profile is the contract's and writes the bytes the other stacked tests expect
//   (those tests run unchanged); the rope policy changes only K.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kvc/oracle/rsqrt.h"
#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_k_norm.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"

namespace kvc {
namespace {

// fp32 -> bf16 bits, round to nearest even, written here so the test does not lean on the oracle.
std::uint16_t to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}
float from_bf16(std::uint16_t h) {
  const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
// x + y in fp64, asserted exact (TwoSum's error term is zero): the float rounding that follows is
// then the single rounding of the fma.
double exact_sum(double x, double y) {
  const double s = x + y, bb = s - x, err = (x - (s - bb)) + (y - bb);
  EXPECT_EQ(err, 0.0) << "the fp64 sum is not exact: the test's derivation does not hold";
  return s;
}

TEST(StackedRopePolicy, TheTwoPatternsGiveHandDerivedBf16Values) {
  const float a = 1.234375f, b = 3.703125f;             // bf16 0x3f9e, 0x406d
  const float c = 0x1.409a52p-2f, s = -0x1.e64236p-1f;  // one cos/sin pair of a table row
  // The contract (§2.7): second = fma(a, s, fl(b*c)). The CUDA pair: second = fma(b, c, fl(a*s)).
  const float bc = static_cast<float>(static_cast<double>(b) * c);  // a float product is exact in fp64
  const float as = static_cast<float>(static_cast<double>(a) * s);
  const float contract_second = static_cast<float>(exact_sum(static_cast<double>(a) * s, bc));
  const float pair_second = static_cast<float>(exact_sum(static_cast<double>(b) * c, as));
  EXPECT_EQ(to_bf16(contract_second), 0xbc53);  // -0x1.a6ffaap-7 rounds down in magnitude
  EXPECT_EQ(to_bf16(pair_second), 0xbc54);      // -0x1.a7000cp-7 rounds up
  const float bs = static_cast<float>(static_cast<double>(b) * s);
  const std::uint16_t first = to_bf16(static_cast<float>(exact_sum(static_cast<double>(a) * c, -bs)));

  // The oracle's head under each policy: r = 1 and w = 1 keep the normed values a and b.
  const float weight[2] = {1.0f, 1.0f};
  const float row[2] = {c, s};
  for (const StackedRope rope : {StackedRope::kContract, StackedRope::kCudaFmaPair}) {
    std::uint16_t k[2] = {to_bf16(a), to_bf16(b)};
    ASSERT_EQ(from_bf16(k[0]), a);
    ASSERT_EQ(from_bf16(k[1]), b);
    oracle::k_norm_rope_head_with_r(k, 2, weight, 1.0f, row, DType::kBF16, rope);
    EXPECT_EQ(k[0], first) << "the first output is the same pattern under both";
    EXPECT_EQ(k[1], rope == StackedRope::kContract ? 0xbc53 : 0xbc54);
  }
}

TEST(StackedReductionPolicy, LaneTreeAndSequentialSumsDifferAsWorkedByHand) {
  // hd = 64: each lane owns 2 contiguous dims. e[0] = 2^12 (square 2^24), every other e = 1.
  std::vector<float> e(64, 1.0f);
  e[0] = 4096.0f;
  // Sequential: 2^24 + 1 is a tie between 2^24 and 2^24 + 2 and rounds to even, 63 times.
  EXPECT_EQ(oracle::k_norm_sum_of_squares(e.data(), 64, KNormReduction::kSequential), 16777216.0f);
  // Lane tree: lane 0 = fl(2^24 + 1) = 2^24, lanes 1..31 = 2. Masks 16, 8, 4, 2, 1 give lane 0
  // 2^24 + 2, + 4, + 8, + 16, + 32 (every partial sum even, so exact): 2^24 + 62.
  EXPECT_EQ(oracle::k_norm_sum_of_squares(e.data(), 64, KNormReduction::kLaneTree), 16777216.0f + 62.0f);
  // Unspecified: the oracle's reference point is the sequential sum.
  EXPECT_EQ(oracle::k_norm_sum_of_squares(e.data(), 64, KNormReduction::kUnspecified), 16777216.0f);
  // A head of 40 dims: ceil(40/32) = 2 per lane, lanes 20..31 empty. Lane 0 = 2^24, lanes 1..19
  // = 2. Mask 16: lane 0 = 2^24 + 2, lanes 1..3 = 4 (lanes 17..19), lanes 4..15 = 2 (empty lanes).
  // Mask 8: lane 0 = 2^24 + 4, lanes 1..3 = 6, lanes 4..7 = 4. Mask 4: lane 0 = 2^24 + 8, lanes
  // 1..3 = 10. Mask 2: lane 0 = 2^24 + 18, lane 1 = 20. Mask 1: S = 2^24 + 38 (the exact sum is
  // 2^24 + 39; every partial sum is even, so exact).
  std::vector<float> f(40, 1.0f);
  f[0] = 4096.0f;
  EXPECT_EQ(oracle::k_norm_lane_tree_sum(f.data(), 40), 16777216.0f + 38.0f);
}

TEST(StackedMean, NonPowerOfTwoHeadDimUsesFmaWithTheRoundedReciprocal) {
  const std::int64_t hd = 96;
  const float inv = 1.0f / 96.0f;  // fl(1/96): not exact
  const float eps = 1e-6f;
  // Sums of squares of small integers, as a head of 16-bit integers gives them exactly.
  float found = -1.0f;
  for (int n = 1; n < 100000 && found < 0; ++n) {
    const float s = static_cast<float>(n);
    const float fused = std::fma(s, inv, eps);
    const float divided = s / 96.0f + eps;  // fl(fl(S/96) + eps) (-ffp-contract=off)
    if (oracle::rsqrt_rn(fused) != oracle::rsqrt_rn(divided)) found = s;
  }
  ASSERT_GT(found, 0.0f) << "no S where the two means give another r";
  const float r = oracle::k_norm_reciprocal(found, hd, eps);
  EXPECT_EQ(r, oracle::rsqrt_rn(std::fma(found, inv, eps)));
  EXPECT_NE(r, oracle::rsqrt_rn(found / 96.0f + eps)) << "S = " << found;
}

TEST(StackedMean, ANonPowerOfTwoHeadDimRunsThroughBothPathsAlike) {
  testkit::StackedCtxKvShape shape;
  shape.layers = 2;
  shape.head_dim = 96;
  shape.seed = 31;
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(shape);
  for (const StackedProfile& p : {contract_stacked_profile(), sglang_dspark_fused_profile()}) {
    StackedCtxKvOutputs a = testkit::make_stacked_outputs(c), b = testkit::make_stacked_outputs(c);
    oracle::StackedCtxKvOptions o;
    o.profile = p;
    o.path = StackedPathRequest::kPerLayer;
    ASSERT_TRUE(oracle::stacked_ctx_kv(c, a, o).ok());
    o.path = StackedPathRequest::kStacked;
    ASSERT_TRUE(oracle::stacked_ctx_kv(c, b, o).ok());
    EXPECT_EQ(a.k_pools, b.k_pools) << stacked_profile_name(p);
    EXPECT_EQ(a.v_pools, b.v_pools) << stacked_profile_name(p);
  }
}

StackedCtxKvCase case_with_locs(const std::vector<std::int64_t>& locs) {
  testkit::StackedCtxKvShape shape;
  shape.layers = 2;
  shape.tokens = static_cast<std::int64_t>(locs.size());
  shape.seed = 7;
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(shape);
  for (std::size_t t = 0; t < locs.size(); ++t) c.cache_loc.store<std::int64_t>(static_cast<std::int64_t>(t), locs[t]);
  return c;
}

Status run(const StackedCtxKvCase& c, StackedCtxKvOutputs& out, CacheLocPolicy policy,
           ValidationLevel level = ValidationLevel::kStrict) {
  oracle::StackedCtxKvOptions o;
  o.profile.cache_loc = policy;
  o.level = level;
  return oracle::stacked_ctx_kv(c, out, o);
}

// The bytes of slot `slot` of a pool (its kv_size elements).
std::vector<std::uint8_t> slot_bytes(const std::vector<std::uint8_t>& pool, const TensorMeta& m, std::int64_t slot,
                                     std::int64_t kv_size) {
  const auto begin = pool.begin() + m.offset_bytes + slot * m.stride(0) * 2;
  return std::vector<std::uint8_t>(begin, begin + kv_size * 2);
}

TEST(StackedCacheLocPolicy, SlotZeroReservedIsNeverWrittenAndOtherSlotsAreTheContracts) {
  const StackedCtxKvCase c = case_with_locs({0, 3, 0, 5, 1});  // two tokens at slot 0: padding, no duplicate
  StackedCtxKvOutputs contract = testkit::make_stacked_outputs(c, 0x11);
  StackedCtxKvOutputs reserved = testkit::make_stacked_outputs(c, 0x11);
  const StackedCtxKvOutputs before = reserved;
  ASSERT_EQ(run(c, contract, CacheLocPolicy::kNegativeSkipped, ValidationLevel::kContract).code, ErrorCode::kOk);
  ASSERT_EQ(run(c, reserved, CacheLocPolicy::kSlotZeroReserved).code, ErrorCode::kOk);
  for (int l = 0; l < c.num_layers(); ++l) {
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    const auto li = static_cast<std::size_t>(l);
    EXPECT_EQ(slot_bytes(reserved.k_pools[li], layer.k_pool, 0, layer.kv_size()),
              slot_bytes(before.k_pools[li], layer.k_pool, 0, layer.kv_size()))
        << "layer " << l << ": slot 0 was written";
    EXPECT_EQ(slot_bytes(reserved.v_pools[li], layer.v_pool, 0, layer.kv_size()),
              slot_bytes(before.v_pools[li], layer.v_pool, 0, layer.kv_size()));
    EXPECT_NE(slot_bytes(contract.k_pools[li], layer.k_pool, 0, layer.kv_size()),
              slot_bytes(before.k_pools[li], layer.k_pool, 0, layer.kv_size()))
        << "under the contract's policy slot 0 is a slot like any other";
    for (std::int64_t slot : {1, 3, 5}) {
      EXPECT_EQ(slot_bytes(reserved.k_pools[li], layer.k_pool, slot, layer.kv_size()),
                slot_bytes(contract.k_pools[li], layer.k_pool, slot, layer.kv_size()));
      EXPECT_EQ(slot_bytes(reserved.v_pools[li], layer.v_pool, slot, layer.kv_size()),
                slot_bytes(contract.v_pools[li], layer.v_pool, slot, layer.kv_size()));
    }
  }
}

TEST(StackedCacheLocPolicy, ANegativeEntryIsE159WhenSlotZeroIsReservedAndASkipOtherwise) {
  const StackedCtxKvCase c = case_with_locs({2, -1, 4});
  for (const ValidationLevel level : {ValidationLevel::kContract, ValidationLevel::kStrict}) {
    StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
    const StackedCtxKvOutputs before = out;
    const Status s = run(c, out, CacheLocPolicy::kSlotZeroReserved, level);
    EXPECT_EQ(s.code, ErrorCode::kStackedNegativeCacheLoc) << s.ToString();
    EXPECT_NE(s.detail.find("token 1"), std::string::npos) << s.ToString();
    EXPECT_EQ(out.k_pools, before.k_pools) << "a rejected call wrote";
    EXPECT_EQ(out.v_pools, before.v_pools);
    StackedCtxKvOutputs skipped = testkit::make_stacked_outputs(c);
    EXPECT_TRUE(run(c, skipped, CacheLocPolicy::kNegativeSkipped, level).ok());
  }
  // Out of range stays E211 under both policies.
  const StackedCtxKvCase far = case_with_locs({2, 1000, 4});
  for (const CacheLocPolicy p : {CacheLocPolicy::kNegativeSkipped, CacheLocPolicy::kSlotZeroReserved}) {
    StackedCtxKvOutputs out = testkit::make_stacked_outputs(far);
    EXPECT_EQ(run(far, out, p).code, ErrorCode::kStackedSlotOutOfRange);
  }
  // A repeated non-zero slot is still a duplicate at strict.
  const StackedCtxKvCase dup = case_with_locs({2, 2, 0});
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(dup);
  EXPECT_EQ(run(dup, out, CacheLocPolicy::kSlotZeroReserved).code, ErrorCode::kStackedDuplicateSlot);
}

TEST(StackedProfiles, TheDefaultIsTheContractAndTheRopePolicyChangesOnlyK) {
  testkit::StackedCtxKvShape shape;
  shape.layers = 2;
  shape.tokens = 512;  // the patterns differ in about 1 of 20000 K elements (issue 25)
  shape.seed = 3;
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(shape);
  StackedCtxKvOutputs by_default = testkit::make_stacked_outputs(c), contract = testkit::make_stacked_outputs(c),
                      pair = testkit::make_stacked_outputs(c);
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, by_default).ok());
  oracle::StackedCtxKvOptions o;
  o.profile = contract_stacked_profile();
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, contract, o).ok());
  o.profile.rope = StackedRope::kCudaFmaPair;
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, pair, o).ok());
  EXPECT_EQ(by_default.k_pools, contract.k_pools);
  EXPECT_EQ(by_default.v_pools, contract.v_pools);
  EXPECT_EQ(pair.v_pools, contract.v_pools) << "V is the stored projection under every policy";
  EXPECT_NE(pair.k_pools, contract.k_pools) << "no K element of 512 tokens x 2 layers told the patterns apart";
}

}  // namespace
}  // namespace kvc
