// device_scope.h: makes a call's device current for the duration of an ABI entry point.
//
// The ABI's tensors say which device they live on; the caller's current device may be another.
// Switching costs a driver call, so it happens only when the devices differ, and the caller's
// device is restored when the scope ends.
#pragma once

#include <cuda_runtime_api.h>

namespace kvc::kernels::detail {

class DeviceScope {
 public:
  cudaError_t enter(int device) {
    cudaError_t e = cudaGetDevice(&previous_);
    if (e != cudaSuccess || previous_ == device) return e;
    e = cudaSetDevice(device);
    switched_ = e == cudaSuccess;
    return e;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace kvc::kernels::detail
