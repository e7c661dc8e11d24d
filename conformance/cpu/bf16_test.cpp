// bf16_test.cpp: bf16 and fp16 conversions, known answers.
#include <gtest/gtest.h>

#include <cmath>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/fp16.h"

namespace kvc::oracle {
namespace {

TEST(Bf16, KnownAnswers) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(float_of(0x3F808000u)), 0x3F80) << "tie, kept part even: down";
  EXPECT_EQ(float_to_bf16(float_of(0x3F818000u)), 0x3F82) << "tie, kept part odd: up";
  EXPECT_EQ(float_to_bf16(float_of(0x3F808001u)), 0x3F81) << "above the tie: up";
  EXPECT_EQ(float_to_bf16(float_of(0x7F7F8000u)), 0x7F80) << "max midpoint rounds to Inf";
  EXPECT_EQ(float_to_bf16(float_of(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(float_to_bf16(float_of(0x00018000u)), 0x0002) << "subnormals round like normals";
  EXPECT_EQ(float_to_bf16(NAN), kBf16CanonicalNan);
  EXPECT_EQ(float_to_bf16(float_of(0xFFC12345u)), kBf16CanonicalNan) << "sign and payload dropped";
  EXPECT_EQ(bf16_to_float(0x4049), float_of(0x40490000u));
}

TEST(Fp16, KnownAnswers) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00) << "max midpoint rounds to Inf";
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000) << "half the smallest subnormal: tie to even 0";
  EXPECT_EQ(float_to_fp16(0x1.8p-24f), 0x0002);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16(NAN), 0x7FFF);
  for (int h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaN
    EXPECT_EQ(float_to_fp16(fp16_to_float(static_cast<std::uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace kvc::oracle
