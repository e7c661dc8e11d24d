// ue8m0.h: UE8M0 (E8M0) block scales and the scale-exponent rule (docs/contract.md §2).
//
// A block scale is a power of two 2^E stored as the byte E + 127 (0xFF = NaN). The exponent of a
// block is E = ceil(log2(q)) with q = fl(amax / 448). Kernels compute that with
// ceilf(log2f(q)), whose fp32-rounded log2 rounds up to the integer just above powers of two:
// for q = 2^k (1 + n 2^-23) with small n, RN_fp32(log2 q) == k, so the kernel gets E = k where the
// mathematical ceiling is k + 1. The two rules are separate, named profiles:
//   kDeviceLog2f: ceil(RN_fp32(log2 q)), the contract (what every kernel produces).
//   kExact:       the mathematical ceil(log2 q).
// They agree whenever amax is a bf16 value (or the 1e-4 floor), which covers all packed-record
// inputs; the exhaustive tests show both facts.
#pragma once

#include <cstdint>

#include "kvc/profile.h"

namespace kvc::oracle {

// E for a positive q. Returns +Inf for q = +Inf (a block holding an Inf). Float-valued because the
// kernels carry E as a float and because of that Inf.
float scale_exponent(float q, ExponentRule rule = ExponentRule::kDeviceLog2f);

// Scale byte clamp(E + 127, 0, 255); E = +Inf gives 0xFF.
std::uint8_t ue8m0_encode(float exponent);
// 2^(byte - 127); 0xFF decodes to NaN.
float ue8m0_decode(std::uint8_t byte);
// 2^-E exactly (0 for E = +Inf).
float inverse_scale(float exponent);

// The scale rules a profile chooses; the default is the contract's.
struct ScaleRules {
  ExponentRule exponent = ExponentRule::kDeviceLog2f;
  AmaxFloor amax_floor = AmaxFloor::kBeforeDivide;
  InfBlockInverse inf_block = InfBlockInverse::kZero;
};
// The scale rules of a profile.
inline ScaleRules scale_rules_of(const Profile& p) { return ScaleRules{p.exponent, p.amax_floor, p.inf_block}; }

// One quantization block's scale, from the values it will quantize.
struct BlockScale {
  float amax;      // max |y| ignoring NaN, floored at 1e-4 when the floor comes before the division
  float exponent;  // E
  float inverse;   // 2^-E (or -Inf for an Inf block under InfBlockInverse::kNegativeInfinity)
  std::uint8_t byte;
};
BlockScale block_scale(const float* values, int count, ExponentRule rule = ExponentRule::kDeviceLog2f);
BlockScale block_scale(const float* values, int count, const ScaleRules& rules);

}  // namespace kvc::oracle
