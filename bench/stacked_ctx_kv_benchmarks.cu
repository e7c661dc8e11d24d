// stacked_ctx_kv_benchmarks.cu: device-side inputs of the stacked context-KV benchmarks (see the .h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "stacked_ctx_kv_benchmarks.h"

namespace kvc::bench {
namespace {

// splitmix64: a counter-based hash, so every element is independent of the launch shape.
__device__ std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__global__ void fill_uniform16_kernel(std::uint16_t* data, std::int64_t count, bool fp16, std::uint64_t seed) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const std::uint64_t bits = mix(seed ^ mix(static_cast<std::uint64_t>(i)));
    const float u = __fmaf_rn(static_cast<float>(bits >> 40), 0x1p-23f, -1.0f);  // [-1, 1)
    data[i] = fp16 ? __half_as_ushort(__float2half_rn(u)) : __bfloat16_as_ushort(__float2bfloat16_rn(u));
  }
}

}  // namespace

cudaError_t fill_uniform16(void* data, std::int64_t count, bool fp16, std::uint64_t seed, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  fill_uniform16_kernel<<<grid, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(data), count, fp16, seed);
  return cudaGetLastError();
}

}  // namespace kvc::bench
