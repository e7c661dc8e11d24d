// bf16_exhaustive_test.cpp: bf16 RNE narrowing over all 2^32 fp32 inputs.
//
// Witnesses: an arithmetic formulation (round the significand to 8 bits in double with
// nearbyint, ties to even) that shares nothing with the bit trick, and CUDA's host
// __float2bfloat16 when its headers are present.
#include <gtest/gtest.h>

#include <cmath>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "testkit/compare/exhaustive_sweep.h"

#if KVC_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#endif

namespace kvc::oracle {
namespace {

// RNE to bf16 by arithmetic: bf16 keeps 8 significant bits down to 2^-126 and is fixed point with
// step 2^-133 below it; beyond the largest finite value the rounding reaches 2^128 = Inf.
std::uint16_t arithmetic_bf16(float x) {
  if (std::isnan(x)) return kBf16CanonicalNan;
  if (std::isinf(x) || x == 0.0f) return static_cast<std::uint16_t>(bits_of(x) >> 16);
  const double v = x;
  double rounded;
  if (std::fabs(v) < 0x1p-126) {
    rounded = std::nearbyint(v * 0x1p133) * 0x1p-133;
  } else {
    int e = 0;
    const double m = std::frexp(v, &e);  // |m| in [0.5, 1): 8 significant bits = m * 2^8
    rounded = std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
  }
  const float f = static_cast<float>(rounded);  // exact, or +-2^128 -> +-Inf
  return static_cast<std::uint16_t>(bits_of(f) >> 16);
}

TEST(Bf16Exhaustive, RneEqualsArithmeticFormulation) {
  const auto r = testkit::sweep_every_float("float_to_bf16 vs arithmetic RNE",
                                            [](float x) { return float_to_bf16(x) == arithmetic_bf16(x); });
  EXPECT_EQ(r.mismatches, 0u);
}

TEST(Bf16Exhaustive, RneEqualsCudaHostConversion) {
#if KVC_HAVE_CUDA_HEADERS
  const auto r = testkit::sweep_every_float("float_to_bf16 vs __float2bfloat16 (host)", [](float x) {
    return float_to_bf16(x) == testkit::bits16_of(__float2bfloat16(x));
  });
  EXPECT_EQ(r.mismatches, 0u);
#else
  GTEST_SKIP() << "CUDA headers (cuda_bf16.h) not found at configure time";
#endif
}

}  // namespace
}  // namespace kvc::oracle
