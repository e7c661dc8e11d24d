// guard_scan.cu: the guard-zone fill and scan kernels (see guard_scan.h).
#include <cuda_runtime_api.h>

#include "testkit/device/guard_pattern.h"
#include "testkit/device/guard_scan.h"

namespace kvc::testkit {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxFillBlocks = 1024;  // a grid-stride loop covers the rest

__global__ void fill_guard_pattern(std::uint8_t* zone, std::int64_t bytes) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += step)
    zone[i] = guard_pattern_byte(i);
}

// One thread block per scan block: its threads compare a strided share each, and the block's
// verdict is one flag byte.
__global__ void mark_blocks_off_pattern(const std::uint8_t* zone, std::int64_t bytes, std::uint8_t* flags) {
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * kGuardScanBlockBytes;
  const std::int64_t end = begin + kGuardScanBlockBytes < bytes ? begin + kGuardScanBlockBytes : bytes;
  int differs = 0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) differs |= zone[i] != guard_pattern_byte(i);
  differs = __syncthreads_or(differs);
  if (threadIdx.x == 0) flags[blockIdx.x] = differs != 0 ? 1 : 0;
}

}  // namespace

int enqueue_guard_fill(std::uint8_t* zone, std::int64_t bytes, void* stream) {
  if (bytes <= 0) return cudaSuccess;
  std::int64_t blocks = (bytes + kThreads - 1) / kThreads;
  if (blocks > kMaxFillBlocks) blocks = kMaxFillBlocks;
  fill_guard_pattern<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(zone, bytes);
  return cudaGetLastError();
}

int enqueue_guard_scan(const std::uint8_t* zone, std::int64_t bytes, std::uint8_t* flags, void* stream) {
  const std::int64_t blocks = guard_scan_blocks(bytes);
  if (blocks == 0) return cudaSuccess;
  mark_blocks_off_pattern<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      zone, bytes, flags);
  return cudaGetLastError();
}

}  // namespace kvc::testkit
