// rms_norm_test.cpp: lane-ordered RMSNorm and correctly rounded rsqrt, known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kvc/contract.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/rsqrt.h"

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
