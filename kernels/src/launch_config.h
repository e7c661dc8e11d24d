// launch_config.h: the launch shapes shared by the kernels.
//
// 8 warps (256 threads) per block, one warp per 512-dim row or Q head; grids are clamped to the
// hardware limits and the kernels stride over what a clamped grid does not cover, so no token
// count can make a launch fail or a row be dropped.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kvc/contract.h"

namespace kvc::kernels::detail {

inline constexpr int kWarpsPerBlock = 8;
inline constexpr int kThreadsPerBlock = kWarpsPerBlock * kWarpLanes;
inline constexpr std::int64_t kMaxGridX = 0x7FFFFFFF;
inline constexpr std::int64_t kMaxGridY = 65535;

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline unsigned grid_x(std::int64_t blocks) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxGridX));
}
inline unsigned grid_y(std::int64_t blocks) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxGridY));
}

}  // namespace kvc::kernels::detail
