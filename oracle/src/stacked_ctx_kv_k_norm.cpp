// stacked_ctx_kv_k_norm.cpp: the stacked op's K epilogue under its policies (see
// stacked_ctx_kv_k_norm.h). Built with -ffp-contract=off: every * and + below is one rounding.
#include "kvc/oracle/stacked_ctx_kv_k_norm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "kvc/contract.h"
#include "kvc/oracle/rsqrt.h"
#include "kvc/oracle/storage16.h"

namespace kvc::oracle {

float k_norm_lane_tree_sum(const float* e, std::int64_t head_dim) {
  const std::int64_t per_lane = (head_dim + kWarpLanes - 1) / kWarpLanes;
  std::array<float, kWarpLanes> acc{};
  for (int lane = 0; lane < kWarpLanes; ++lane)
    for (std::int64_t d = lane * per_lane; d < std::min(head_dim, (lane + 1) * per_lane); ++d)
      acc[static_cast<std::size_t>(lane)] = std::fma(e[d], e[d], acc[static_cast<std::size_t>(lane)]);
  // The butterfly of §1.3: after the step with mask m, lane L holds acc[L] + acc[L + m] (L < m).
  for (int m : kButterflyMasks)
    for (int lane = 0; lane < m; ++lane)
      acc[static_cast<std::size_t>(lane)] =
          acc[static_cast<std::size_t>(lane)] + acc[static_cast<std::size_t>(lane + m)];
  return acc[0];
}

float k_norm_sum_of_squares(const float* e, std::int64_t head_dim, KNormReduction reduction) {
  if (reduction == KNormReduction::kLaneTree) return k_norm_lane_tree_sum(e, head_dim);
  float sum = 0.0f;
  for (std::int64_t d = 0; d < head_dim; ++d) sum = std::fma(e[d], e[d], sum);
  return sum;
}

float k_norm_reciprocal(float sum, std::int64_t head_dim, float eps) {
  const float inv_hd = 1.0f / static_cast<float>(head_dim);  // fl(1/hd): one correctly rounded division
  return rsqrt_rn(std::fma(sum, inv_hd, eps));
}

float k_norm_normed(float e, float r, float w, DType storage) {
  const float normed = (e * r) * w;  // fl(fl(e * r) * w)
  return widen16(narrow16(normed, storage), storage);
}

RotatedPair stacked_rotate_pair(float a, float b, float c, float s, StackedRope rope) {
  if (rope == StackedRope::kContract) return rope_rotate_pair(a, b, c, s);
  const float bs = b * s;  // fl(b*s)
  const float as = a * s;  // fl(a*s)
  return RotatedPair{std::fma(a, c, -bs), std::fma(b, c, as)};
}

void k_norm_rope_head_with_r(std::uint16_t* k, std::int64_t head_dim, const float* weight, float r,
                             const float* cos_sin_row, DType storage, StackedRope rope) {
  std::vector<float> e(static_cast<std::size_t>(head_dim));
  for (std::int64_t d = 0; d < head_dim; ++d)
    e[static_cast<std::size_t>(d)] = k_norm_normed(widen16(k[d], storage), r, weight[d], storage);
  const std::int64_t half = head_dim / 2;
  for (std::int64_t d = 0; d < half; ++d) {
    const RotatedPair p = stacked_rotate_pair(e[static_cast<std::size_t>(d)], e[static_cast<std::size_t>(d + half)],
                                              cos_sin_row[d], cos_sin_row[half + d], rope);
    k[d] = narrow16(p.first, storage);
    k[d + half] = narrow16(p.second, storage);
  }
}

}  // namespace kvc::oracle
