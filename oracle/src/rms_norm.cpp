// rms_norm.cpp: lane-ordered RMSNorm (see rms_norm.h).
#include "kvc/oracle/rms_norm.h"

#include <array>
#include <cmath>

#include "kvc/contract.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/rsqrt.h"

namespace kvc::oracle {

float lane_ordered_sum_of_squares(const float* row512) {
  std::array<float, kWarpLanes> acc{};
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    for (int i = 0; i < kDimsPerLane; ++i) {
      const float e = row512[lane * kDimsPerLane + i];
      acc[lane] = std::fma(e, e, acc[lane]);
    }
  }
  for (int mask : kButterflyMasks) {
    std::array<float, kWarpLanes> next{};
    for (int lane = 0; lane < kWarpLanes; ++lane) next[lane] = acc[lane] + acc[lane ^ mask];
    acc = next;
  }
  return acc[0];  // every lane holds the same sum: each step adds the same two operands
}

float rms_inverse(float sum_of_squares, float eps) {
  return rsqrt_rn(std::fma(sum_of_squares, 1.0f / static_cast<float>(kHeadDim), eps));
}

float row_rms_inverse(const float* row512, float eps) { return rms_inverse(lane_ordered_sum_of_squares(row512), eps); }

void q_norm_row(float* row512, float eps) { q_norm_row_with_inverse(row512, row_rms_inverse(row512, eps)); }

void kv_norm_row(float* row512, const std::uint16_t* weight_bf16, float eps) {
  kv_norm_row_with_inverse(row512, weight_bf16, row_rms_inverse(row512, eps));
}

void q_norm_row_with_inverse(float* row512, float r) {
  for (int d = 0; d < kHeadDim; ++d) row512[d] = row512[d] * r;
}

void kv_norm_row_with_inverse(float* row512, const std::uint16_t* weight_bf16, float r) {
  for (int d = 0; d < kHeadDim; ++d) {
    const float normed = row512[d] * r;
    row512[d] = round_through_bf16(normed * bf16_to_float(weight_bf16[d]));
  }
}

}  // namespace kvc::oracle
