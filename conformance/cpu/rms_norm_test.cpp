// rms_norm_test.cpp: lane-ordered RMSNorm and correctly rounded rsqrt, known answers.
//
// KvNormMultipliesByRThenByTheWeight catches kv_norm's two roundings taken in another order
// (the weight applied to r before the element), which random rows and the golden fixtures let
// through: the two orders differ in fp32 by an ulp, which rarely crosses a bf16 rounding point.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kvc/contract.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/rsqrt.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/small_cases.h"

namespace kvc::oracle {
namespace {

// Row crafted so the order matters: dim 0 = 4096 (square 2^24) and 511 ones. In lane 0 each +1
// on 2^24 is a tie that rounds back to 2^24 (even); the other 31 lanes hold 16 exactly, and the
// butterfly adds them exactly: S = 2^24 + 496. A sequential sum loses every +1: S = 2^24.
std::vector<float> order_sensitive_row() {
  std::vector<float> row(kHeadDim, 1.0f);
  row[0] = 4096.0f;
  return row;
}

float sequential_sum_of_squares(const std::vector<float>& row) {
  float s = 0.0f;
  for (float e : row) s = std::fma(e, e, s);
  return s;
}

TEST(RmsNorm, ButterflyOrderKnownAnswer) {
  const auto row = order_sensitive_row();
  EXPECT_EQ(lane_ordered_sum_of_squares(row.data()), 16777216.0f + 496.0f);
  EXPECT_EQ(sequential_sum_of_squares(row), 16777216.0f) << "the sequential order rounds differently";
}

// The butterfly order 16, 8, 4, 2, 1 (docs/contract.md §2), pinned by a row where the reverse
// order and a sequential sum both give another S. dim 0 = 4096 (lane 0), dim 16 = 1 (lane 1),
// dim 272 = 1 (lane 17), the rest 0. Masks 16..1: lanes 1 and 17 meet at mask 16 (1 + 1 = 2
// exactly), lane 0 meets that 2 only at mask 1: S = 2^24 + 2 (exact, the fp32 spacing at 2^24 is
// 2). Masks 1..16: lane 0 meets lane 1 first, 2^24 + 1 is a tie and rounds to even, 2^24; then
// 2^24 + 1 again at mask 16: S = 2^24. Sequential: 2^24 + 1 + 1, each a tie: S = 2^24.
// eps = 188.828125 puts the two values of fma(S, 1/512, eps), 32956.83203125 and 32956.828125,
// on either side of 1 / (361 * 2^-16)^2 = 32956.8319..., so r is 361 * 2^-16 = 0x3bb48000 (a
// bf16 tie, stored as 0x3bb4 by ties-to-even) for the contract's order and 0x3bb48001 (stored
// 0x3bb5) for the other two: the q-norm and kv_norm outputs below differ in their bytes.
constexpr float kButterflyEps = 188.828125f;
std::vector<float> butterfly_row() {
  std::vector<float> row(kHeadDim, 0.0f);
  row[0] = 4096.0f;
  row[16] = 1.0f;
  row[272] = 1.0f;
  return row;
}

TEST(RmsNorm, ButterflySixteenToOneKnownAnswer) {
  const auto row = butterfly_row();
  EXPECT_EQ(lane_ordered_sum_of_squares(row.data()), 16777218.0f) << "masks 16, 8, 4, 2, 1";
  EXPECT_EQ(sequential_sum_of_squares(row), 16777216.0f) << "a sequential sum loses both ones";
  EXPECT_EQ(bits_of(row_rms_inverse(row.data(), kButterflyEps)), 0x3bb48000u);
  EXPECT_EQ(bits_of(rms_inverse(16777216.0f, kButterflyEps)), 0x3bb48001u) << "the r of the other orders";
}

// The same row through the ops, every expected byte by hand: Q-norm of the packed legacy op (no
// RoPE) and the standalone kv_norm with weight 1. Stored bf16: dim 0 = 4096 r -> 0x41b4, dims 16
// and 272 = r -> 0x3bb4, every other dim 0. With the reverse or sequential order: 0x41b5 / 0x3bb5.
TEST(RmsNorm, ButterflyOrderPinnedThroughTheOps) {
  const auto row = butterfly_row();
  std::vector<std::uint16_t> bits(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d)
    bits[static_cast<std::size_t>(d)] = float_to_bf16(row[static_cast<std::size_t>(d)]);
  auto expected = [](int d) -> std::uint16_t { return d == 0 ? 0x41b4 : (d == 16 || d == 272) ? 0x3bb4 : 0x0000; };

  InsertCase kv = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584, 3);
  testkit::QuerySpec q;
  q.heads = 1;
  q.padded_heads = 8;
  for (std::int64_t t = 0; t < kv.num_rows(); ++t) q.q.insert(q.q.end(), bits.begin(), bits.end());
  q.eps = kButterflyEps;
  q.apply_q_norm = true;
  q.apply_q_rope = false;
  const InsertCase c = testkit::make_legacy_case(kv, q);
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(legacy_insert(c, out).ok());
  for (int d = 0; d < kHeadDim; ++d) {
    const std::uint16_t got = static_cast<std::uint16_t>(out.q_out[2 * d] | out.q_out[2 * d + 1] << 8);
    ASSERT_EQ(got, expected(d)) << "q_out token 0 head 0 dim " << d;
  }

  const HostTensor kv_rows = make_tensor_from(DType::kBF16, bits, {1, kHeadDim});
  const HostTensor weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  std::vector<std::uint16_t> normed;
  ASSERT_TRUE(kv_norm(kv_rows, weight, kButterflyEps, &normed).ok());
  for (int d = 0; d < kHeadDim; ++d) ASSERT_EQ(normed[static_cast<std::size_t>(d)], expected(d)) << "kv_norm dim " << d;
}

TEST(RmsNorm, QNormKnownAnswerDependsOnOrder) {
  auto row = order_sensitive_row();
  const float eps = 1e-6f;
  q_norm_row(row.data(), eps);
  const float mean_sq = static_cast<float>((16777216.0 + 496.0) / 512.0 + static_cast<double>(eps));
  const float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean_sq)));
  EXPECT_EQ(row[1], r);
  EXPECT_EQ(row[0], 4096.0f * r);
  const float r_sequential = rsqrt_rn(std::fma(16777216.0f, 1.0f / 512.0f, eps));
  EXPECT_NE(row[1], r_sequential) << "a sequential reduction would give other bits";
}

TEST(RmsNorm, KvNormAppliesWeightThenRoundsToBf16) {
  auto row = order_sensitive_row();
  const std::vector<std::uint16_t> weight(kHeadDim, float_to_bf16(0.75f));
  const float eps = 1e-6f;
  const float r = rms_inverse(lane_ordered_sum_of_squares(row.data()), eps);
  kv_norm_row(row.data(), weight.data(), eps);
  EXPECT_EQ(row[1], round_through_bf16(r * 0.75f));
  EXPECT_EQ(row[0], round_through_bf16((4096.0f * r) * 0.75f));
  EXPECT_EQ(row[0], bf16_to_float(float_to_bf16(row[0]))) << "output is bf16-valued";
}

// kv_norm's roundings run left to right, fl(fl(e * r) * w) (docs/contract.md §2.4), and here the
// order shows in the bf16 output. e = 3, w = 1.25 (bf16 0x3FA0), r = 0x3E891112 = 8982802 * 2^-25:
//   contract: fl(3 r) = 26948406 * 2^-25 (exact: 25 bits, even); times 1.25 = 67371015 * 2^-26,
//     which rounds (step 8) to 8421377 * 2^-23 = 1 + 2^-8 + 2^-23 (0x3F808001), just above the
//     bf16 midpoint 1 + 2^-8: bf16 0x3F81;
//   weight first, fl(e * fl(r * w)): fl(1.25 r) = 44914010 * 2^-27 is a tie (step 4), to even
//     11228502 * 2^-25; times 3 = 33685506 * 2^-25, a tie again, to 8421376 * 2^-23 = 1 + 2^-8
//     exactly (0x3F808000): the bf16 midpoint, which ties to even, 0x3F80.
// The function is the one the fused insert, the standalone kv_norm and the approximate-rsqrt check
// all call with their r.
TEST(RmsNorm, KvNormMultipliesByRThenByTheWeight) {
  std::vector<float> row(kHeadDim, 3.0f);
  const std::vector<std::uint16_t> weight(kHeadDim, 0x3FA0);
  kv_norm_row_with_inverse(row.data(), weight.data(), float_of(0x3E891112u));
  for (int d = 0; d < kHeadDim; ++d) ASSERT_EQ(bits_of(row[d]), 0x3F810000u) << "dim " << d;
}

TEST(RmsNorm, ZeroRowWithTinyEpsStaysZero) {
  std::vector<float> row(kHeadDim, 0.0f);
  q_norm_row(row.data(), 1e-20f);  // the upstream dummy query: rsqrt(1e-20) = 1e10, 0 * 1e10 = 0
  for (float e : row) ASSERT_EQ(e, 0.0f);
}

TEST(Rsqrt, KnownAnswersAndSpecialValues) {
  EXPECT_EQ(rsqrt_rn(4.0f), 0.5f);
  EXPECT_EQ(rsqrt_rn(0.25f), 2.0f);
  EXPECT_EQ(rsqrt_rn(0x1p-148f), 0x1p74f) << "subnormal input";
  EXPECT_EQ(rsqrt_rn(0x1p126f), 0x1p-63f);
  EXPECT_EQ(rsqrt_rn(1e-20f), static_cast<float>(1.0 / std::sqrt(static_cast<double>(1e-20f))));
  EXPECT_EQ(rsqrt_rn(INFINITY), 0.0f);
  EXPECT_EQ(rsqrt_rn(0.0f), INFINITY);
  EXPECT_EQ(rsqrt_rn(-0.0f), -INFINITY);
  EXPECT_TRUE(std::isnan(rsqrt_rn(-1.0f)));
  EXPECT_TRUE(std::isnan(rsqrt_rn(NAN)));
}

}  // namespace
}  // namespace kvc::oracle
