// cuda_fault_unavailable.cpp: a build without CUDA has no context to lose (see cuda_fault.h).
#include "cuda_fault.h"

namespace kvc::runner {

std::optional<CudaFault> sticky_cuda_fault() { return std::nullopt; }

}  // namespace kvc::runner
