// faults_on_large_batch.cu: a kernel library that is ours except on large batches: a call whose
// row tensor (kv, the store op's rows, the stacked op's x) has more than kFaultRows rows launches,
// instead of our kernel, one that writes through an invalid device pointer. The launch succeeds;
// the fault (cudaErrorIllegalAddress) comes when the caller synchronises, and it is sticky: every
// later CUDA call of the process fails with it.
//
// Expected verdict: `kvconform run --kernels <it>` fails exactly the checks that call it with more
// than kFaultRows rows, each with "CUDA fault: cudaErrorIllegalAddress: ...", passes every other
// check, exits 1 and writes every report (runner_device_test). In one process the first fault
// would fail every later check or end the run; this is the library that shows it does not.
//
// Built as kvc_double_faults_on_large_batch with its own static CUDA runtime, kept private
// (--exclude-libs) as libkvconform_kernels.so keeps its own; both launch on the caller's stream
// in the device's primary context.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "kvc/kernel_abi.h"
#include "testkit/doubles/forward_to_ours.h"

namespace {

using kvc::doubles::ours;

// Above this many rows a call faults; the suites' large scenarios (16384 tokens and up, the
// stacked op's 8192-token shape, kv_norm's 65536 rows) fault, their small ones pass.
constexpr std::int64_t kFaultRows = 4096;

// The host's page at 0x1000 (below Linux's mmap_min_addr): mapped for no one, in the unified
// address space the device shares.
constexpr std::uintptr_t kInvalidDeviceAddress = 0x1000;

__global__ void write_through(unsigned int* target) { *target = 0xDEADu; }

std::int64_t leading_dim(const DLTensor* t) {
  return t != nullptr && t->ndim >= 1 && t->shape != nullptr ? t->shape[0] : 0;
}

// The argument struct reaches a field that ends at `field_end` (older callers' structs may not).
template <typename Args>
bool reaches(const Args* args, std::size_t field_end) {
  return args != nullptr && args->struct_size >= field_end;
}

int launch_fault(void* stream, char* error, std::size_t capacity) {
  write_through<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(reinterpret_cast<unsigned int*>(kInvalidDeviceAddress));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    if (capacity > 0) std::snprintf(error, capacity, "faults_on_large_batch: launch failed: %s", cudaGetErrorString(e));
    return KVC_STATUS_CUDA_ERROR;
  }
  return KVC_STATUS_OK;  // the fault comes when the caller synchronises
}

}  // namespace

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  const int rc = ours().kvc_library_info_get(out);
  if (rc == KVC_STATUS_OK)
    out->name = "kvc-double faults_on_large_batch (our kernels; an illegal address above 4096 rows)";
  return rc;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  return ours().kvc_op_support_get(op, format, kv_dtype, out);
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  if (reaches(args, offsetof(kvc_kv_only_insert_args, kv) + sizeof(args->kv)) && leading_dim(args->kv) > kFaultRows)
    return launch_fault(stream, error, error_capacity);
  return ours().kvc_kv_only_insert(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  if (reaches(args, offsetof(kvc_legacy_insert_args, kv) + sizeof(args->kv)) && leading_dim(args->kv) > kFaultRows)
    return launch_fault(stream, error, error_capacity);
  return ours().kvc_legacy_insert(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  if (reaches(args, offsetof(kvc_kv_norm_args, kv) + sizeof(args->kv)) && leading_dim(args->kv) > kFaultRows)
    return launch_fault(stream, error, error_capacity);
  return ours().kvc_kv_norm(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  if (reaches(args, offsetof(kvc_store_rotated_args, rows) + sizeof(args->rows)) &&
      leading_dim(args->rows) > kFaultRows)
    return launch_fault(stream, error, error_capacity);
  if (ours().kvc_store_rotated == nullptr) return KVC_STATUS_UNSUPPORTED;
  return ours().kvc_store_rotated(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  if (reaches(args, offsetof(kvc_stacked_ctx_kv_args, x) + sizeof(args->x)) && leading_dim(args->x) > kFaultRows)
    return launch_fault(stream, error, error_capacity);
  if (ours().kvc_stacked_ctx_kv == nullptr) return KVC_STATUS_UNSUPPORTED;
  return ours().kvc_stacked_ctx_kv(args, stream, error, error_capacity);
}

}  // extern "C"
