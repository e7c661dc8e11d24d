// bf16.h: bfloat16 widening and round-to-nearest-even narrowing (docs/contract.md §2).
//
// bf16 is the upper half of an fp32, so widening is exact. Narrowing is RNE with overflow to
// +-Inf; NaN becomes the canonical quiet NaN 0x7FFF (sign and payload dropped), which is what
// CUDA's __float2bfloat16 produces on host and device.
#pragma once

#include <cstdint>

#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {

inline constexpr std::uint16_t kBf16CanonicalNan = 0x7FFF;

// Both conversions are defined here, inline, because the ops call them for every element; they
// are integer-only, so no caller's floating-point flags can change them.

// f32(b): exact.
inline float bf16_to_float(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

// bf(x): the contract's formula (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 for non-NaN x.
inline std::uint16_t float_to_bf16(float x) {
  const std::uint32_t bits = bits_of(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kBf16CanonicalNan;
  // Adding 0x7FFF plus the kept LSB carries into bit 16 exactly when the discarded half is above
  // the midpoint, or at it with an odd kept part: round to nearest, ties to even. Overflow of the
  // exponent yields 0x7F80 (Inf), which is the correct rounding of values >= the max midpoint.
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// f32(bf(x)): the bf16 round trip used before packed quantization and after kv_norm.
inline float round_through_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

}  // namespace kvc::oracle
