// bf16.h: bfloat16 widening and round-to-nearest-even narrowing (docs/contract.md §2).
//
// bf16 is the upper half of an fp32, so widening is exact. Narrowing is RNE with overflow to
// +-Inf; NaN becomes the canonical quiet NaN 0x7FFF (sign and payload dropped), which is what
// CUDA's __float2bfloat16 produces on host and device.
#pragma once

#include <cstdint>

namespace kvc::oracle {

inline constexpr std::uint16_t kBf16CanonicalNan = 0x7FFF;

// f32(b): exact.
float bf16_to_float(std::uint16_t b);

// bf(x): the contract's formula (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 for non-NaN x.
std::uint16_t float_to_bf16(float x);

// f32(bf(x)): the bf16 round trip used before packed quantization and after kv_norm.
inline float round_through_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

}  // namespace kvc::oracle
