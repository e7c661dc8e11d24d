// fp8_e4m3.h: OCP e4m3fn encode and decode (docs/contract.md §1-2).
//
// e4m3fn: bias 7, 3 mantissa bits, subnormals, no Inf, NaN = 0x7F/0xFF, largest finite 448.
// Two encoders, because the contract's behaviour on NaN comes from the clamp in front of the
// conversion, not from the conversion itself:
//   e4m3_encode_raw(x)     = CUDA __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3):
//                            RNE, |x| > 448 and +-Inf saturate to +-448, NaN -> 0x7F.
//   e4m3_encode(x)         = e4m3_encode_raw(fminf(fmaxf(x, -448), 448)): the contract's
//                            clamp-first form. fmaxf returns its non-NaN operand, so NaN -> -448
//                            -> 0xFE. Signed zero is kept (-0 -> 0x80).
//   e4m3_encode(x, order)  = the same with the clamp's min and max in either order (a profile
//                            policy, docs/contract.md §6.1: SGLang's order sends NaN to 0x7E).
// The encoders are defined here, inline, because the ops call them for every quantized element.
// They work on the fp32 bit pattern only (integer compares, shifts and adds), so no caller's
// floating-point flags or rounding mode can change them.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/profile.h"

namespace kvc::oracle {

namespace e4m3_detail {
constexpr std::uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kF32InfBits = 0x7F800000u;  // above it: NaN
constexpr std::uint32_t kF32MantissaBits = 23;
constexpr std::uint32_t kF32Bias = 127;
constexpr std::uint32_t kE4m3MantissaBits = 3;
constexpr std::uint32_t kE4m3Bias = 7;
constexpr std::uint8_t kE4m3MaxCode = 0x7E;  // 448
constexpr std::uint8_t kE4m3Nan = 0x7F;
// Below e4m3's smallest normal, 2^-6 (fp32 biased exponent 121), e4m3 is fixed point with step
// 2^-9.
constexpr std::uint32_t kE4m3MinNormalMagnitude = kE4m3Bias - 1;  // 2^-6 = 2^-(this)
constexpr std::uint32_t kF32ExponentOfMinNormal = kF32Bias - kE4m3MinNormalMagnitude;
constexpr std::uint32_t kE4m3SubnormalStepMagnitude = kE4m3MinNormalMagnitude + kE4m3MantissaBits;  // 2^-9
}  // namespace e4m3_detail

inline std::uint8_t e4m3_encode_raw(float x) {
  using namespace e4m3_detail;
  const std::uint32_t bits = bits_of(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t abs_bits = bits & kF32AbsMask;
  if (abs_bits > kF32InfBits) return kE4m3Nan;
  if (float_of(abs_bits) > kFp8Max) return sign | kE4m3MaxCode;  // satfinite, Inf included
  const std::uint32_t exponent = abs_bits >> kF32MantissaBits;   // fp32 biased exponent
  if (exponent >= kF32ExponentOfMinNormal) {
    // Normal: RNE of the magnitude's bits to 3 mantissa bits. The rounded value is
    // (fp32 biased exponent << 3) | mantissa, a carry out of the mantissa bumping the exponent;
    // rebiasing from 127 to 7 subtracts 120 << 3. |x| <= 448 keeps the result <= 0x7E.
    const std::uint32_t rounded = shift_right_rne(abs_bits, kF32MantissaBits - kE4m3MantissaBits);
    return sign | static_cast<std::uint8_t>(rounded - ((kF32Bias - kE4m3Bias) << kE4m3MantissaBits));
  }
  // Subnormal (|x| < 2^-6): the code is the number of 2^-9 units, RNE. |x| = significand *
  // 2^(exponent - 127 - 23) with the implicit bit in the significand (fp32 subnormals have no
  // implicit bit and exponent 1), so units = significand / 2^(127 + 23 - 9 - exponent); the shift
  // is >= 21 here, and from 25 on every significand (< 2^24) rounds to 0. 8 units round up into
  // the smallest normal, code 0x08, which is the right code.
  const std::uint32_t significand =
      exponent == 0 ? abs_bits : (abs_bits & ((1u << kF32MantissaBits) - 1u)) | (1u << kF32MantissaBits);
  const std::uint32_t shift =
      kF32Bias + kF32MantissaBits - kE4m3SubnormalStepMagnitude - (exponent == 0 ? 1 : exponent);
  if (shift > 24) return sign;
  return sign | static_cast<std::uint8_t>(shift_right_rne(significand, shift));
}

// fminf(fmaxf(x, -448), 448), spelled out because its NaN behaviour is part of the contract.
// The device's fmaxf (FMNMX) returns the non-NaN operand for every NaN, quiet or signaling.
// glibc's fmaxf returns NaN when an operand is a signaling NaN (0x7F800001..0x7FBFFFFF and the
// negative twins: 8,388,606 inputs, found by the device exhaustive sweep), so NaN (any payload,
// any sign) is tested first on the bits rather than left to the library. Otherwise the min/max
// only ever replaces a value beyond +-448 (Inf included); zeros keep their sign.
inline float clamp_fp8_range(float x) {
  using namespace e4m3_detail;
  if ((bits_of(x) & kF32AbsMask) > kF32InfBits) return -kFp8Max;  // NaN, any kind
  if (x > kFp8Max) return kFp8Max;                                // +Inf included
  if (x < -kFp8Max) return -kFp8Max;
  return x;
}

inline std::uint8_t e4m3_encode(float x) { return e4m3_encode_raw(clamp_fp8_range(x)); }

inline float clamp_fp8_range(float x, ClampOrder order) {
  if (order == ClampOrder::kMaxThenMin) return clamp_fp8_range(x);
  if ((bits_of(x) & e4m3_detail::kF32AbsMask) > e4m3_detail::kF32InfBits) return kFp8Max;  // NaN, any kind
  return clamp_fp8_range(x);
}

inline std::uint8_t e4m3_encode(float x, ClampOrder order) { return e4m3_encode_raw(clamp_fp8_range(x, order)); }

// Exact value of a code; 0x7F and 0xFF decode to NaN.
float e4m3_decode(std::uint8_t code);

}  // namespace kvc::oracle
