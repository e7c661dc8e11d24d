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
#pragma once

#include <cstdint>

namespace kvc::oracle {

std::uint8_t e4m3_encode_raw(float x);
std::uint8_t e4m3_encode(float x);

// fminf(fmaxf(x, -448), 448), spelled out because its NaN behaviour is part of the contract.
float clamp_fp8_range(float x);

// Exact value of a code; 0x7F and 0xFF decode to NaN.
float e4m3_decode(std::uint8_t code);

}  // namespace kvc::oracle
