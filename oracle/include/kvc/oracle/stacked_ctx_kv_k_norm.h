// stacked_ctx_kv_k_norm.h: the stacked op's K epilogue, one head, under the declared policies
// (docs/contract.md §4.5 steps 2 and 3, §6.2.1).
//
// The epilogue is split where the policies act, so that the judge can re-run a part of it: the
// sum of squares S (its order is the reduction policy), the reciprocal r (rn, the reference point
// of the approximate policy's budget), the stored normed values given r, and the rotation of a
// pair (the rope policy). Given r, everything after it is fixed by the declaration: an
// unspecified reduction and an approximate reciprocal leave only r free, which is what the
// judge's budgets rest on (testkit/compare/stacked_k_norm_freedom.h).
#pragma once

#include <cstdint>

#include "kvc/insert_case.h"
#include "kvc/oracle/rope.h"
#include "kvc/stacked_profile.h"

namespace kvc::oracle {

// S over e[0..hd) in the reduction's order. kUnspecified sums sequentially: the oracle's value
// is the reference point the judge's budget is centred on, not a claim about the library's order.
float k_norm_sum_of_squares(const float* e, std::int64_t head_dim, KNormReduction reduction);

// The lane tree alone: 32 lanes of ceil(hd/32) contiguous dims (lane L: [L k, min(hd, (L+1) k)),
// empty lanes hold 0), each lane a sequential fma chain from 0, then the §1.3 butterfly tree.
float k_norm_lane_tree_sum(const float* e, std::int64_t head_dim);

// ms + eps = fma(S, fl(1/hd), eps); r = rsqrt_rn(ms + eps). Under kApproximate this is the
// centre of the budget of kApproxReciprocalMaxUlps fp32 ulps.
float k_norm_reciprocal(float sum, std::int64_t head_dim, float eps);

// The stored normed value round_D(fl(fl(e * r) * w)), widened.
float k_norm_normed(float e, float r, float w, DType storage);

// One NeoX pair under the rope policy (fp32, before the rounding to D).
RotatedPair stacked_rotate_pair(float a, float b, float c, float s, StackedRope rope);

// Norm with the given r, then NeoX RoPE: `k` holds the stored projected K of one head on entry,
// the stored rotated K on return.
void k_norm_rope_head_with_r(std::uint16_t* k, std::int64_t head_dim, const float* weight, float r,
                             const float* cos_sin_row, DType storage, StackedRope rope);

}  // namespace kvc::oracle
