// rope.cpp: RoPE rotations (see rope.h).
#include "kvc/oracle/rope.h"

#include <cmath>

#include "kvc/contract.h"

namespace kvc::oracle {

RotatedPair rope_rotate_pair(float a, float b, float c, float s) {
  const float bs = b * s;  // fl(b*s): one rounding (the oracle is built with -ffp-contract=off)
  const float bc = b * c;
  return RotatedPair{std::fma(a, c, -bs), std::fma(a, s, bc)};
}

void rope_gptj_row(float* row512, const float* cos_sin_row64) {
  for (int j = 0; j < kRopePairs; ++j) {
    float* pair = row512 + kNopeDim + 2 * j;
    const RotatedPair r = rope_rotate_pair(pair[0], pair[1], cos_sin_row64[j], cos_sin_row64[kRopePairs + j]);
    pair[0] = r.first;
    pair[1] = r.second;
  }
}

void rope_neox_head(float* head, int head_dim, const float* cos_sin_row) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    const RotatedPair r = rope_rotate_pair(head[i], head[i + half], cos_sin_row[i], cos_sin_row[half + i]);
    head[i] = r.first;
    head[i + half] = r.second;
  }
}

}  // namespace kvc::oracle
