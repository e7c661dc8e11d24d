// rms_norm.h: RMSNorm over one 512-dim row in the contract's lane order (docs/contract.md §2).
//
// The reduction order is fixed by the kernel's execution model: lane L (0..31) accumulates
// acc = fma(e_i, e_i, acc) over its 16 dims [16L, 16L+16) in order, then a butterfly over masks
// 16, 8, 4, 2, 1 replaces every lane's acc by acc_L + acc_{L^m}. A sequential or pairwise sum
// rounds differently, so the order is part of the contract.
// r = rsqrt_rn(fma(S, 1/512, eps)); q-norm: e = fl(e * r); kv_norm with a bf16 weight:
// e = f32(bf(fl(fl(e * r) * w_d))).
#pragma once

#include <cstdint>

namespace kvc::oracle {

// S: the lane-ordered sum of squares of a 512-float row.
float lane_ordered_sum_of_squares(const float* row512);

// r = rsqrt_rn(fma(S, 1/512, eps)).
float rms_inverse(float sum_of_squares, float eps);

// r of a row: rms_inverse(lane_ordered_sum_of_squares(row512), eps).
float row_rms_inverse(const float* row512, float eps);

// Q-norm in place (no weight, no rounding to bf16: RoPE follows in fp32).
void q_norm_row(float* row512, float eps);

// kv_norm in place with a bf16 weight; ends with the bf16 round trip.
void kv_norm_row(float* row512, const std::uint16_t* weight_bf16, float eps);

// The same two norms with r given: the correctly rounded one above, or an r' near it when a
// kernel's declared approximate rsqrt is checked (docs/contract.md §2).
void q_norm_row_with_inverse(float* row512, float r);
void kv_norm_row_with_inverse(float* row512, const std::uint16_t* weight_bf16, float r);

}  // namespace kvc::oracle
