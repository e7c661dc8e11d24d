// cuda_fault.cpp: the sticky-error probe of a CUDA build (see cuda_fault.h).
#include "cuda_fault.h"

#include <cuda_runtime_api.h>

namespace kvc::runner {

std::optional<CudaFault> sticky_cuda_fault() {
  const cudaError_t first = cudaDeviceSynchronize();
  if (first == cudaSuccess) return std::nullopt;
  (void)cudaGetLastError();  // clears an error that is not sticky
  if (cudaDeviceSynchronize() == cudaSuccess) return std::nullopt;
  return CudaFault{cudaGetErrorName(first), cudaGetErrorString(first)};
}

}  // namespace kvc::runner
