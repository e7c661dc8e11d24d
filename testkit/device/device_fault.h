// device_fault.h: a CUDA fault during a library call, as the error the device backend's callers
// already report.
//
// With the guarded layout (guarded_buffer.h) a write beyond a guard zone lands in unmapped
// addresses and faults (cudaErrorIllegalAddress) instead of corrupting another allocation; the
// fault surfaces when the call's stream is synchronised. DeviceFaultError is a KernelCallError,
// so every caller that reports a failed kernel call (the runner's judge_library_call: "kernel call
// failed: ...", the GPU suites) makes it the check's failure, with the CUDA error, the entry
// point, the call (op, format, geometry, rows) and the rows whose slot addresses outside the
// cache, the likely culprits. The CUDA context is unusable afterwards (a sticky error: every later
// CUDA call of the process fails, and a process may end before it reports anything), so the
// message also goes to stderr the moment the fault is found.
#pragma once

#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "testkit/device/device_backend.h"

namespace kvc::testkit {

class DeviceFaultError : public KernelCallError {
 public:
  DeviceFaultError(int cuda_error, const std::string& message) : KernelCallError(message), cuda_error_(cuda_error) {}
  // The cudaError_t found synchronising (cudaErrorIllegalAddress, ...).
  int cuda_error() const { return cuda_error_; }

 private:
  int cuda_error_;
};

// The error for `cuda_error`, found synchronising after `entry_point` of `library`:
// "<library>: CUDA fault in <entry point>: <cudaGetErrorName>: <cudaGetErrorString>" and each line
// of `call` indented; written to stderr before it is returned.
DeviceFaultError device_fault(int cuda_error, const std::string& library, const std::string& entry_point,
                              const std::vector<std::string>& call);

// What a fault report says about an insert call: "case: kv_only_insert packed584, 2 pages x 16
// tokens, page stride 9376 B, 6 rows, slots [3, 32, -1, 7]", then the rows whose slot lies
// outside the cache ("rows addressing outside the cache (likely culprits):" and a line each, as
// out_of_range_row_lines() gives them), or "no row addresses outside the cache".
std::vector<std::string> describe_insert_call(const InsertCase& c);

}  // namespace kvc::testkit
