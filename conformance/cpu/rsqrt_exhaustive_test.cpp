// rsqrt_exhaustive_test.cpp: rsqrt_rn is correctly rounded for every fp32 in [1, 4).
//
// rsqrt(x * 4^k) = rsqrt(x) * 2^-k exactly, so the 2^24 inputs of [1, 4) (both exponent parities)
// cover every significand the function can meet; the check uses long double (64-bit significand),
// independent of the 128-bit midpoint proof inside rsqrt_rn.
#include <gtest/gtest.h>

#include <cmath>

#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/rsqrt.h"
#include "testkit/compare/exhaustive_sweep.h"

namespace kvc::oracle {
namespace {

TEST(RsqrtExhaustive, CorrectlyRoundedOnOneToFour) {
  const auto r = testkit::sweep_u32(bits_of(1.0f), bits_of(4.0f) - 1, [](std::uint32_t u) {
    const float x = float_of(u);
    const float got = rsqrt_rn(x);
    const long double exact = 1.0L / std::sqrt(static_cast<long double>(x));
    const long double err = std::fabs(static_cast<long double>(got) - exact);
    const long double up = std::fabs(static_cast<long double>(std::nextafter(got, INFINITY)) - exact);
    const long double down = std::fabs(static_cast<long double>(std::nextafter(got, 0.0f)) - exact);
    return err < up && err < down;
  });
  std::printf("%s\n", testkit::describe("rsqrt_rn nearest on [1,4)", r).c_str());
  EXPECT_EQ(r.mismatches, 0u);
}

}  // namespace
}  // namespace kvc::oracle
