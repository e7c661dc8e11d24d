// cuda_fault.h: a CUDA error that lost the process's context, found after a check.
//
// A kernel that writes through an invalid pointer (cudaErrorIllegalAddress), misaligned
// (cudaErrorMisalignedAddress), traps or asserts leaves a sticky error: every later CUDA call of
// the process returns it, so every later check would fail for a fault that is not its own. The
// process running a kernel suite (suite_child.h) asks after each check, and when a check threw;
// on a fault it fails that check with cuda_fault_line() and exits, and the suite goes on in a new
// process after it (suite_children.h).
#pragma once

#include <optional>
#include <string>

namespace kvc::runner {

struct CudaFault {
  std::string name;  // cudaGetErrorName: "cudaErrorIllegalAddress"
  std::string text;  // cudaGetErrorString: "an illegal memory access was encountered"
};

// The current device's sticky error, if any: an error that cudaDeviceSynchronize() still returns
// after cudaGetLastError() cleared what can be cleared. Creates the context when there is none,
// so only a process that runs kernel suites asks. Never a fault in a build without CUDA.
std::optional<CudaFault> sticky_cuda_fault();

// "CUDA fault: cudaErrorIllegalAddress: an illegal memory access was encountered": the first line
// of a check that faulted, in every report.
inline std::string cuda_fault_line(const CudaFault& f) { return "CUDA fault: " + f.name + ": " + f.text; }

}  // namespace kvc::runner
