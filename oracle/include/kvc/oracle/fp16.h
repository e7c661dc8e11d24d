// fp16.h: IEEE binary16 widening and RNE narrowing.
//
// Needed only where the legacy op accepts fp16 q/kv (docs/contract.md §4): every bf16 rounding of the KV
// side then becomes an fp16 rounding. Narrowing is RNE including subnormals, overflow to +-Inf,
// NaN to the canonical 0x7FFF (CUDA's __float2half_rn behaviour).
#pragma once

#include <cstdint>

namespace kvc::oracle {

float fp16_to_float(std::uint16_t h);
std::uint16_t float_to_fp16(float x);
inline float round_through_fp16(float x) { return fp16_to_float(float_to_fp16(x)); }

}  // namespace kvc::oracle
