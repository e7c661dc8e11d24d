// default_stream_gate.cu: the spinning kernel behind DefaultStreamGate (see default_stream_gate.h).
#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

#include "testkit/device/default_stream_gate.h"
#include "testkit/device/device_buffers.h"

namespace kvc::gpu {
namespace {

__device__ unsigned long long global_nanoseconds() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// flags[0] is set by the host to open the gate; flags[1] is set here when the timeout ends it.
__global__ void hold_until_open(volatile int* flags, unsigned long long timeout_ns) {
  const unsigned long long start = global_nanoseconds();
  while (flags[0] == 0) {
    if (global_nanoseconds() - start > timeout_ns) {
      flags[1] = 1;
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

DefaultStreamGate::DefaultStreamGate(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
  void* p = nullptr;
  testkit::check_cuda(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped), "cudaHostAlloc of the gate flags");
  host_flags_ = static_cast<int*>(p);
  host_flags_[0] = 0;
  host_flags_[1] = 0;
  void* d = nullptr;
  testkit::check_cuda(cudaHostGetDevicePointer(&d, p, 0), "cudaHostGetDevicePointer of the gate flags");
  device_flags_ = static_cast<int*>(d);
}

DefaultStreamGate::~DefaultStreamGate() {
  if (closed_) open();
  cudaFreeHost(host_flags_);  // nothing to do about a failure here
}

void DefaultStreamGate::close() {
  volatile int* flags = host_flags_;
  flags[0] = 0;
  flags[1] = 0;
  const auto timeout_ns = static_cast<unsigned long long>(timeout_seconds_ * 1e9);
  hold_until_open<<<1, 1, 0, cudaStreamLegacy>>>(device_flags_, timeout_ns);
  testkit::check_cuda(cudaGetLastError(), "launching the default-stream gate");
  closed_ = true;
}

bool DefaultStreamGate::open() {
  volatile int* flags = host_flags_;
  flags[0] = 1;
  closed_ = false;
  testkit::check_cuda(cudaStreamSynchronize(cudaStreamLegacy), "waiting for the legacy default stream");
  return flags[1] == 0;
}

bool DefaultStreamGate::wait_for(void* stream, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(stream));
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) testkit::check_cuda(e, "cudaStreamQuery");
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace kvc::gpu
