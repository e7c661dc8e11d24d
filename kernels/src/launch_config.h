// launch_config.h: the launch shapes shared by the kernels.
//
// 8 warps (256 threads) per block, one warp per 512-dim row or Q head; grids are clamped to the
// hardware limits and the kernels stride over what a clamped grid does not cover, so no token
// count can make a launch fail or a row be dropped. The large-batch kernels run persistent grids
// (resident_blocks), measured faster on the H200 than one block per 8 rows.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
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

// Blocks of a persistent grid: as many as fit on the device at once (the kernel's occupancy times
// the SM count; an override > 0 sets the blocks per SM), so that every warp loops and prefetches.
// The occupancy is queried once per device and kernel (one cache per kernel: the template
// argument is the kernel itself, not its type, which instantiations share).
template <auto kKernel>
std::int64_t resident_blocks(int blocks_per_sm_override = 0) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) device = -1;
  int per_sm = blocks_per_sm_override;
  if (per_sm <= 0) {
    per_sm = device >= 0 ? cached[device].load(std::memory_order_relaxed) : 0;
    if (per_sm <= 0) {
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, kThreadsPerBlock, 0) != cudaSuccess ||
          per_sm <= 0)
        per_sm = 1;
      if (device >= 0) cached[device].store(per_sm, std::memory_order_relaxed);
    }
  }
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device < 0 ? 0 : device) != cudaSuccess || sms <= 0)
    sms = 1;
  return static_cast<std::int64_t>(sms) * per_sm;
}

}  // namespace kvc::kernels::detail
