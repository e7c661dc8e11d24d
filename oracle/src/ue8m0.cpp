// ue8m0.cpp: block scales (see ue8m0.h).
#include "kvc/oracle/ue8m0.h"

#include <cmath>

#include "kvc/contract.h"
#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {

float scale_exponent(float q, ExponentRule rule) {
  if (std::isinf(q)) return INFINITY;
  if (rule == ExponentRule::kDeviceLog2f) {
    // log2 in double is within 1 ulp of exact, far inside fp32's rounding; rounding it once to
    // fp32 reproduces a correctly rounded log2f, which is what the device's log2f measured as.
    return std::ceil(static_cast<float>(std::log2(static_cast<double>(q))));
  }
  // Exact: q = m * 2^e with m in [1, 2): ceil(log2 q) = e, or e + 1 when m > 1.
  int e = 0;
  const float m = std::frexp(q, &e);  // q = m * 2^e, m in [0.5, 1)
  return static_cast<float>(m == 0.5f ? e - 1 : e);
}

std::uint8_t ue8m0_encode(float exponent) {
  const float biased = std::fmax(std::fmin(exponent + static_cast<float>(kUe8m0Bias), 255.0f), 0.0f);
  return static_cast<std::uint8_t>(biased);
}

float ue8m0_decode(std::uint8_t byte) {
  if (byte == kUe8m0Nan) return float_of(0x7FC00000u);
  return std::ldexp(1.0f, static_cast<int>(byte) - kUe8m0Bias);
}

float inverse_scale(float exponent) {
  if (std::isinf(exponent)) return exponent > 0 ? 0.0f : INFINITY;
  return std::ldexp(1.0f, -static_cast<int>(exponent));
}

BlockScale block_scale(const float* values, int count, ExponentRule rule) {
  ScaleRules rules;
  rules.exponent = rule;
  return block_scale(values, count, rules);
}

BlockScale block_scale(const float* values, int count, const ScaleRules& rules) {
  // fmaxf(amax, |v|) over the block, spelled as a compare: a NaN compares false and is ignored,
  // exactly as fmaxf ignores a NaN operand, and amax itself is never NaN. (The library call per
  // element cost more than the rest of the block's scale.)
  float amax = 0.0f;
  for (int i = 0; i < count; ++i) {
    const float a = std::fabs(values[i]);
    if (a > amax) amax = a;
  }
  float q;
  if (rules.amax_floor == AmaxFloor::kBeforeDivide) {
    if (amax < kAmaxFloor) amax = kAmaxFloor;
    q = amax / kFp8Max;
  } else {
    q = amax / kFp8Max;
    if (q < kAmaxFloor) q = kAmaxFloor;
  }
  const float exponent = scale_exponent(q, rules.exponent);
  float inverse = inverse_scale(exponent);
  if (std::isinf(exponent) && rules.inf_block == InfBlockInverse::kNegativeInfinity) inverse = -INFINITY;
  return BlockScale{amax, exponent, inverse, ue8m0_encode(exponent)};
}

}  // namespace kvc::oracle
