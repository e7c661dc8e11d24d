// rsqrt.cpp: correctly rounded reciprocal square root (see rsqrt.h).
#include "kvc/oracle/rsqrt.h"

#include <cmath>
#include <cstdint>

#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {
namespace {

__extension__ using u128 = unsigned __int128;  // GCC/Clang extension, x86-64 only

// A positive finite float as integer significand times a power of two.
struct Dyadic {
  std::uint64_t significand;
  int exponent;
};

Dyadic dyadic_of(float x) {
  int e = 0;
  const float m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1); exact for subnormals too
  return Dyadic{static_cast<std::uint64_t>(std::ldexp(m, 24)), e - 24};
}

// Sign of (m^2 * x - 1), all exact: m = M 2^a with M < 2^25, x = X 2^b with X < 2^24.
int compare_square_times_x_with_one(Dyadic m, Dyadic x) {
  const u128 product = static_cast<u128>(m.significand) * m.significand * x.significand;  // < 2^74
  const int shift = 2 * m.exponent + x.exponent;                                          // value = product * 2^shift
  if (shift >= 0) return 1;  // product >= 1 and the scale only grows it (product == 1 impossible)
  if (-shift >= 127) return -1;
  const u128 one = static_cast<u128>(1) << (-shift);
  return product < one ? -1 : (product > one ? 1 : 0);
}

// The midpoint between normal float r and its upper neighbour, as a dyadic with 25-bit M.
Dyadic upper_midpoint(float r) {
  const Dyadic d = dyadic_of(r);
  return Dyadic{2 * d.significand + 1, d.exponent - 1};
}

}  // namespace

float rsqrt_rn(float x) {
  if (std::isnan(x) || x < 0.0f) return float_of(0x7FC00000u);
  if (x == 0.0f) return std::signbit(x) ? -INFINITY : INFINITY;
  if (std::isinf(x)) return 0.0f;
  float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
  const Dyadic xd = dyadic_of(x);
  // The estimate is within an ulp; walk until 1/sqrt(x) lies between r's two midpoints.
  // 1/sqrt(x) > mid  <=>  mid^2 * x < 1. The result is always a normal float.
  for (;;) {
    const float above = std::nextafter(r, INFINITY);
    if (compare_square_times_x_with_one(upper_midpoint(r), xd) < 0) {
      r = above;
      continue;
    }
    const float below = std::nextafter(r, 0.0f);
    if (compare_square_times_x_with_one(upper_midpoint(below), xd) > 0) {
      r = below;
      continue;
    }
    return r;
  }
}

}  // namespace kvc::oracle
