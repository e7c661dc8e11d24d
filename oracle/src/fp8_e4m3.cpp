// fp8_e4m3.cpp: e4m3fn conversions (see fp8_e4m3.h).
#include "kvc/oracle/fp8_e4m3.h"

#include <cmath>

#include "kvc/contract.h"
#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {
namespace {
constexpr std::uint8_t kE4m3MaxCode = 0x7E;  // 448
constexpr std::uint8_t kE4m3Nan = 0x7F;
constexpr float kE4m3MinNormal = 0x1p-6f;
constexpr float kE4m3SubnormalUnitsPerOne = 0x1p9f;  // subnormal step is 2^-9
constexpr int kE4m3Bias = 7;
}  // namespace

std::uint8_t e4m3_encode_raw(float x) {
  const std::uint32_t bits = bits_of(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) return kE4m3Nan;
  const float a = float_of(abs_bits);
  if (a > kFp8Max) return sign | kE4m3MaxCode;  // satfinite, Inf included
  if (a < kE4m3MinNormal) {
    // Fixed point with step 2^-9; the scaling is exact, nearbyint rounds half to even.
    const float units = std::nearbyint(a * kE4m3SubnormalUnitsPerOne);
    return sign | static_cast<std::uint8_t>(units);  // 8 units is the smallest normal, code 0x08
  }
  int exponent = static_cast<int>(abs_bits >> 23) - 127;  // in [-6, 8]
  std::uint32_t mantissa = (abs_bits >> 20) & 0x7u;
  const std::uint32_t dropped = abs_bits & 0xFFFFFu;
  if (dropped > 0x80000u || (dropped == 0x80000u && (mantissa & 1u))) ++mantissa;
  if (mantissa == 8u) {
    mantissa = 0;
    ++exponent;
  }
  const std::uint32_t code = (static_cast<std::uint32_t>(exponent + kE4m3Bias) << 3) | mantissa;
  return sign | static_cast<std::uint8_t>(code > kE4m3MaxCode ? kE4m3MaxCode : code);
}

// The device's fmaxf (FMNMX) returns the non-NaN operand for every NaN, quiet or signaling.
// glibc's fmaxf returns NaN when an operand is a signaling NaN (0x7F800001..0x7FBFFFFF and the
// negative twins: 8,388,606 inputs, found by the device exhaustive sweep), so NaN is tested
// first rather than left to the library.
float clamp_fp8_range(float x) {
  if (std::isnan(x)) return -kFp8Max;
  return std::fmin(std::fmax(x, -kFp8Max), kFp8Max);
}

std::uint8_t e4m3_encode(float x) { return e4m3_encode_raw(clamp_fp8_range(x)); }

float e4m3_decode(std::uint8_t code) {
  const bool negative = (code & 0x80u) != 0;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  float magnitude;
  if (exponent == 0xF && mantissa == 0x7) {
    magnitude = float_of(0x7FC00000u);
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - kE4m3Bias - 3);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace kvc::oracle
