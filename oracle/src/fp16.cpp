// fp16.cpp: binary16 conversions (see fp16.h).
#include "kvc/oracle/fp16.h"

#include <cmath>

#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {

float fp16_to_float(std::uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  float magnitude;
  if (exponent == 0x1F) {
    magnitude = mantissa ? float_of(0x7FC00000u) : INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal: m * 2^-24
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

std::uint16_t float_to_fp16(float x) {
  const std::uint32_t bits = bits_of(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) return 0x7FFF;
  if (abs_bits == 0x7F800000u) return sign | 0x7C00;
  const float a = float_of(abs_bits);
  // Below 2^-14 binary16 is fixed point with step 2^-24: scale (exact) and round half to even.
  if (a < 0x1p-14f) {
    const float units = std::nearbyint(a * 0x1p24f);  // default rounding mode: ties to even
    return sign | static_cast<std::uint16_t>(units);  // 1024 units is the smallest normal
  }
  // Normal: keep 10 of fp32's 23 mantissa bits, RNE on the 13 dropped bits; a carry out of the
  // mantissa bumps the exponent, and past 65504 the result becomes Inf (0x7C00).
  std::uint32_t exponent = (abs_bits >> 23) - 127 + 15;
  std::uint32_t mantissa = (abs_bits >> 13) & 0x3FFu;
  const std::uint32_t dropped = abs_bits & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (mantissa & 1u))) ++mantissa;
  if (mantissa == 0x400u) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent >= 0x1F) return sign | 0x7C00;
  return sign | static_cast<std::uint16_t>((exponent << 10) | mantissa);
}

}  // namespace kvc::oracle
