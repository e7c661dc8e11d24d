// stacked_ctx_kv_benchmarks.h: device-side input generation for the stacked context-KV benchmarks.
//
// The benchmark model is large (8 layers of a 4096-wide fused QKV weight: 400 MB of bf16), so its
// values are made on the device (stacked_ctx_kv_benchmarks.cu) instead of on the host and uploaded.
// The benchmarks themselves (stacked_ctx_kv_benchmarks.cpp) register with Google Benchmark when
// the program starts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kvc::bench {

// Fills `count` 16-bit values (bf16, or fp16 when `fp16`) with U(-1, 1) from a counter hash of
// (seed, index): the same values for the same seed on any device. Asynchronous on `stream`.
cudaError_t fill_uniform16(void* data, std::int64_t count, bool fp16, std::uint64_t seed, cudaStream_t stream);

}  // namespace kvc::bench
