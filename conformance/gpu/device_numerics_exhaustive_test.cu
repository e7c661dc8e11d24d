// device_numerics_exhaustive_test.cu (GPU, exhaustive): the kernels' device conversion functions
// (kvc/kernels/device_numerics.cuh, the very code the kernels run) over every fp32 input against
// the oracle's primitives (docs/contract.md §2):
//   e4m3_from_float_clamped  vs oracle::e4m3_encode     (clamp-first e4m3fn satfinite RNE)
//   bf16_bits_from_float     vs oracle::float_to_bf16   (RNE, every NaN -> 0x7FFF)
//   fp16_bits_from_float     vs oracle::float_to_fp16   (RNE with subnormals, NaN -> 0x7FFF)
//   ue8m0_exponent(q)        vs oracle::scale_exponent(q, kDeviceLog2f) for every positive
//                            normal q (ceil of the device's fp32 log2f)
// The device computes a chunk of inputs at a time; the host compares it with the oracle on all
// cores. Each test prints its mismatch count and wall time. Catches a conversion that differs
// from the contract on any single input (a NaN payload, a tie, a subnormal, the 3676 q just
// above powers of two where fp32 log2f rounds down).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "testkit/device/gpu_test_support.h"
#include "kvc/kernels/device_numerics.cuh"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/ue8m0.h"
#include "testkit/compare/exhaustive_sweep.h"

namespace kvc {
namespace {

constexpr std::uint64_t kChunk = std::uint64_t{1} << 26;  // inputs per device pass
constexpr std::uint32_t kFirstNormal = 0x00800000u;
constexpr std::uint32_t kLastFinite = 0x7F7FFFFFu;
constexpr int kThreadsPerBlock = 256;
constexpr int kBlocks = 4096;

struct E4m3 {
  using Out = std::uint8_t;
  __device__ Out operator()(float x) const { return kernels::e4m3_from_float_clamped(x); }
  static Out oracle(float x) { return oracle::e4m3_encode(x); }
};
struct Bf16 {
  using Out = std::uint16_t;
  __device__ Out operator()(float x) const { return kernels::bf16_bits_from_float(x); }
  static Out oracle(float x) { return oracle::float_to_bf16(x); }
};
struct Fp16 {
  using Out = std::uint16_t;
  __device__ Out operator()(float x) const { return kernels::fp16_bits_from_float(x); }
  static Out oracle(float x) { return oracle::float_to_fp16(x); }
};
struct Ue8m0Exponent {
  using Out = std::int32_t;
  __device__ Out operator()(float q) const { return kernels::ue8m0_exponent(q); }
  static Out oracle(float q) { return static_cast<Out>(oracle::scale_exponent(q, kvc::ExponentRule::kDeviceLog2f)); }
};

template <typename F>
__global__ void evaluate(std::uint32_t first, std::uint32_t count, typename F::Out* out) {
  F f{};
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    out[i] = f(__uint_as_float(first + i));
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Every input in [begin, end] through F on the device, compared with F::oracle on the host.
template <typename F>
testkit::SweepResult device_sweep(std::uint32_t begin, std::uint32_t end) {
  using Out = typename F::Out;
  const auto start = std::chrono::steady_clock::now();
  Out* device_out = nullptr;
  testkit::check_cuda(cudaMalloc(&device_out, kChunk * sizeof(Out)), "cudaMalloc for the sweep");
  std::vector<Out> host(kChunk);
  testkit::SweepResult total;
  const std::uint64_t last = end;
  for (std::uint64_t first = begin; first <= last; first += kChunk) {
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(kChunk, last - first + 1));
    evaluate<F><<<kBlocks, kThreadsPerBlock>>>(static_cast<std::uint32_t>(first), count, device_out);
    testkit::check_cuda(cudaGetLastError(), "launch of the sweep kernel");
    testkit::check_cuda(cudaMemcpy(host.data(), device_out, count * sizeof(Out), cudaMemcpyDeviceToHost),
                        "download of a chunk");
    const testkit::SweepResult r =
        testkit::sweep_u32(static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(first + count - 1),
                           [&](std::uint32_t u) { return host[u - first] == F::oracle(float_of(u)); });
    total.checked += r.checked;
    total.mismatches += r.mismatches;
    for (std::uint32_t u : r.first_mismatches)
      if (total.first_mismatches.size() < testkit::SweepResult::kKeptMismatches) total.first_mismatches.push_back(u);
  }
  cudaFree(device_out);
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total;
}

// The device value of one input, for the failure message.
template <typename F>
typename F::Out device_value(std::uint32_t u) {
  typename F::Out* d = nullptr;
  typename F::Out h{};
  testkit::check_cuda(cudaMalloc(&d, sizeof h), "cudaMalloc");
  evaluate<F><<<1, 1>>>(u, 1, d);
  testkit::check_cuda(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), "download");
  cudaFree(d);
  return h;
}

template <typename F>
void expect_exhaustive_match(const char* what, std::uint32_t begin, std::uint32_t end) {
  const testkit::SweepResult r = device_sweep<F>(begin, end);
  std::printf("%s\n", testkit::describe(what, r).c_str());
  std::string examples;
  for (std::uint32_t u : r.first_mismatches) {
    char line[128];
    std::snprintf(line, sizeof line, "\n  input 0x%08x: device %lld, oracle %lld", u,
                  static_cast<long long>(device_value<F>(u)), static_cast<long long>(F::oracle(float_of(u))));
    examples += line;
  }
  EXPECT_EQ(r.mismatches, 0u) << what << examples;
}

TEST(DeviceNumericsExhaustive, E4m3FromFloatClampedEqualsOracleOnAll2To32Inputs) {
  KVC_REQUIRE_CUDA_DEVICE();
  expect_exhaustive_match<E4m3>("device e4m3_from_float_clamped vs oracle e4m3_encode", 0u, 0xFFFFFFFFu);
}

TEST(DeviceNumericsExhaustive, Bf16FromFloatEqualsOracleOnAll2To32Inputs) {
  KVC_REQUIRE_CUDA_DEVICE();
  expect_exhaustive_match<Bf16>("device bf16_bits_from_float vs oracle float_to_bf16", 0u, 0xFFFFFFFFu);
}

TEST(DeviceNumericsExhaustive, Fp16FromFloatEqualsOracleOnAll2To32Inputs) {
  KVC_REQUIRE_CUDA_DEVICE();
  expect_exhaustive_match<Fp16>("device fp16_bits_from_float vs oracle float_to_fp16", 0u, 0xFFFFFFFFu);
}

TEST(DeviceNumericsExhaustive, Ue8m0ExponentEqualsOracleDeviceLog2fRuleOnEveryPositiveNormalQ) {
  KVC_REQUIRE_CUDA_DEVICE();
  expect_exhaustive_match<Ue8m0Exponent>("device ue8m0_exponent vs oracle scale_exponent(kDeviceLog2f)", kFirstNormal,
                                         kLastFinite);
}

}  // namespace
}  // namespace kvc
