// ue8m0_test.cpp: scale bytes and block scales, known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kvc/contract.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/ue8m0.h"

namespace kvc::oracle {
namespace {

TEST(Ue8m0, EncodeDecode) {
  EXPECT_EQ(ue8m0_encode(0.0f), 127);
  EXPECT_EQ(ue8m0_encode(-22.0f), 105);
  EXPECT_EQ(ue8m0_encode(-200.0f), 0) << "clamped at 0";
  EXPECT_EQ(ue8m0_encode(200.0f), 255) << "clamped at 255";
  EXPECT_EQ(ue8m0_encode(INFINITY), kUe8m0Nan);
  EXPECT_EQ(ue8m0_decode(127), 1.0f);
  EXPECT_EQ(ue8m0_decode(105), 0x1p-22f);
  EXPECT_TRUE(std::isnan(ue8m0_decode(kUe8m0Nan)));
  EXPECT_EQ(inverse_scale(-22.0f), 0x1p22f);
  EXPECT_EQ(inverse_scale(INFINITY), 0.0f);
}

TEST(Ue8m0, RulesDifferJustAbovePowersOfTwo) {
  const float q = float_of(0x41800001u);  // 16 * (1 + 2^-23)
  EXPECT_EQ(scale_exponent(q, ExponentRule::kDeviceLog2f), 4.0f) << "fp32 log2 rounds to 4";
  EXPECT_EQ(scale_exponent(q, ExponentRule::kExact), 5.0f);
  EXPECT_EQ(scale_exponent(16.0f, ExponentRule::kDeviceLog2f), 4.0f);
  EXPECT_EQ(scale_exponent(16.0f, ExponentRule::kExact), 4.0f);
  EXPECT_EQ(scale_exponent(float_of(0x41800006u), ExponentRule::kDeviceLog2f), 5.0f);
}

TEST(Ue8m0, BlockScaleFloorNanAndInf) {
  std::vector<float> zeros(64, 0.0f);
  const BlockScale z = block_scale(zeros.data(), 64);
  EXPECT_EQ(z.amax, kAmaxFloor);
  EXPECT_EQ(z.exponent, -22.0f) << "ceil(log2(1e-4/448)) = -22";
  EXPECT_EQ(z.byte, 105) << "an all-zero block has scale byte 105";

  std::vector<float> v(64, 1.0f);
  v[5] = NAN;
  v[9] = -448.0f;
  const BlockScale s = block_scale(v.data(), 64);
  EXPECT_EQ(s.amax, 448.0f) << "NaN is ignored by the absmax";
  EXPECT_EQ(s.byte, 127);

  v[9] = -INFINITY;
  const BlockScale inf = block_scale(v.data(), 64);
  EXPECT_EQ(inf.byte, kUe8m0Nan);
  EXPECT_EQ(inf.inverse, 0.0f);

  v.assign(32, 0.5f);
  v[0] = 448.0f * 4.0f;  // amax exactly 448 * 2^2: scale 2^2
  EXPECT_EQ(block_scale(v.data(), 32).byte, 129);
  v[0] = std::nextafter(448.0f * 4.0f, INFINITY);  // one ulp above: next power
  EXPECT_EQ(block_scale(v.data(), 32).byte, 130);
}

}  // namespace
}  // namespace kvc::oracle
