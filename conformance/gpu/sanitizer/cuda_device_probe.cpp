// cuda_device_probe.cpp: kvc_cuda_device_probe, asked by the sanitizer wrapper whether there is a
// CUDA device to run on. Prints the device and the runtime and driver versions and exits 0, or
// prints why not (the GPU suite's skip reason) and exits 1.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "testkit/device/device_buffers.h"

int main() {
  const std::string why = kvc::testkit::cuda_device_unavailable();
  if (!why.empty()) {
    std::printf("%s\n", why.c_str());
    return 1;
  }
  int device = 0, runtime = 0, driver = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::printf("no usable CUDA device: cudaGetDeviceProperties failed\n");
    return 1;
  }
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("device %d: %s (sm_%d%d), CUDA runtime %d, driver %d\n", device, prop.name, prop.major, prop.minor,
              runtime, driver);
  return 0;
}
