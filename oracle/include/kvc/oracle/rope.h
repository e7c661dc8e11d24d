// rope.h: rotary position embedding in the contract's rounding pattern (docs/contract.md §2).
//
// One rotation of a pair (a, b) by (c, s) is computed as
//   a' = fma(a, c, -fl(b * s))      b' = fma(a, s, fl(b * c))
// i.e. the kernel's FMUL then FFMA. Any other contraction (plain mul/mul/sub, or the fma on the
// other product) differs in about a third of random inputs, so the pattern is part of the contract.
// GPT-J pairs adjacent dims (448+2j, 449+2j); NeoX pairs dim i with i + hd/2. Both read a cos/sin
// row laid out as [cos_0 .. cos_{n-1} | sin_0 .. sin_{n-1}] with n = rotary_dim / 2.
#pragma once

#include <cstdint>

namespace kvc::oracle {

struct RotatedPair {
  float first;
  float second;
};

RotatedPair rope_rotate_pair(float a, float b, float c, float s);

// GPT-J on the DeepSeek-V4 row: rotates dims [448, 512) of a 512-float row in place, using the
// 64-float cos/sin row of its position.
void rope_gptj_row(float* row512, const float* cos_sin_row64);

// NeoX over a head of `head_dim` floats (rotary_dim == head_dim), in place; cos_sin_row has
// head_dim floats. Uses the same rounding pattern as GPT-J (the project's choice; SGLang's
// kernel contraction is unverified).
void rope_neox_head(float* head, int head_dim, const float* cos_sin_row);

}  // namespace kvc::oracle
