// fp8_e4m3_test.cpp: e4m3fn decode of all 256 codes and the encoder's edge behaviour.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "kvc/contract.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/fp8_e4m3.h"

namespace kvc::oracle {
namespace {

// Value of a code from the OCP definition, computed with pow in double (independent of the
// decoder's ldexp path): normal (-1)^s 2^(e-7) (1 + m/8), subnormal (-1)^s 2^-6 (m/8).
double value_from_bit_formula(int code) {
  const int s = (code >> 7) & 1, e = (code >> 3) & 0xF, m = code & 7;
  const double mag = e == 0 ? std::pow(2.0, -6) * (m / 8.0) : std::pow(2.0, e - 7) * (1.0 + m / 8.0);
  return s ? -mag : mag;
}

TEST(Fp8E4m3, DecodeAll256CodesMatchesBitFormula) {
  for (int code = 0; code < 256; ++code) {
    const float got = e4m3_decode(static_cast<std::uint8_t>(code));
    if ((code & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), value_from_bit_formula(code)) << "code 0x" << std::hex << code;
    EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << "code 0x" << std::hex << code;
  }
  EXPECT_EQ(e4m3_decode(0x7E), 448.0f);
  EXPECT_EQ(e4m3_decode(0x01), 0x1p-9f);
  EXPECT_EQ(e4m3_decode(0x08), 0x1p-6f);
}

TEST(Fp8E4m3, EveryFiniteCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    EXPECT_EQ(e4m3_encode(e4m3_decode(static_cast<std::uint8_t>(code))), code) << std::hex << code;
  }
}

TEST(Fp8E4m3, ContractEdgeValues) {
  EXPECT_EQ(e4m3_encode(NAN), kE4m3NegMax) << "NaN passes the clamp as -448";
  for (std::uint32_t signaling : {0x7F800001u, 0x7FBFFFFFu, 0xFF800001u, 0xFFBFFFFFu})
    EXPECT_EQ(e4m3_encode(float_of(signaling)), kE4m3NegMax)
        << "signaling NaN 0x" << std::hex << signaling << " passes the clamp as -448 too (device fmaxf)";
  EXPECT_EQ(e4m3_encode(-NAN), kE4m3NegMax);
  EXPECT_EQ(e4m3_encode_raw(NAN), 0x7F) << "the raw conversion keeps NaN";
  EXPECT_EQ(e4m3_encode(-0.0f), 0x80) << "signed zero is kept";
  EXPECT_EQ(e4m3_encode(0.0f), 0x00);
  EXPECT_EQ(e4m3_encode(INFINITY), 0x7E);
  EXPECT_EQ(e4m3_encode(-INFINITY), 0xFE);
  EXPECT_EQ(e4m3_encode(464.0f), 0x7E) << "midpoint 448/480 saturates";
  EXPECT_EQ(e4m3_encode(1e30f), 0x7E);
  // Ties to even: 1 + 1/16 lies halfway between 1 (0x38) and 1.125 (0x39).
  EXPECT_EQ(e4m3_encode(1.0625f), 0x38);
  EXPECT_EQ(e4m3_encode(1.1875f), 0x3A);  // between 1.125 (odd) and 1.25 (even)
  // Subnormals: step 2^-9; half a step rounds to even 0, 1.5 steps to 2 steps.
  EXPECT_EQ(e4m3_encode(0x1p-10f), 0x00);
  EXPECT_EQ(e4m3_encode(0x1.8p-9f), 0x02);
  EXPECT_EQ(e4m3_encode(-0x1p-11f), 0x80) << "negative values that round to zero keep the sign";
  EXPECT_EQ(e4m3_encode(0x1.fp-7f), 0x08) << "largest subnormal region rounds up into the first normal";
}

}  // namespace
}  // namespace kvc::oracle
