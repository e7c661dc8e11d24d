// zero_block_launch.cu: the test double `zero_block_launch` (libkvc_double_zero_block_launch.so).
//
// Plants: a library that launches its kernel with a grid of zero blocks when a call has zero rows
// (slot_mapping of the inserts, kv of kv_norm, indices of the store op, x of the stacked op: size
// 0), which CUDA refuses (CUDA 13 on the H200: cudaErrorInvalidValue, "invalid argument"; older
// runtimes: cudaErrorInvalidConfiguration); the library reports it as KVC_STATUS_CUDA_ERROR (401) with CUDA's error
// text, as kernel_abi.h asks, and clears the error (it is not sticky). Every call with rows, and every declaration, is
// our kernels' (forward_to_ours.h).
//
// Verdicts:
//  - kvconform run: FAILED (exit 1): every zero-row check (the matrix and store cells of 0 tokens,
//    the kv_norm cells of 0 rows, the stacked cells of 0 tokens) fails with "returned 401 (CUDA
//    error): zero_block_launch: cudaErrorInvalidValue: invalid argument" (seen on the H200).
//  - ctest --preset gpu with KVC_KERNELS set to it: the Tokens0 cells of gpu_kv_insert_test and
//    gpu_legacy_insert_test, the zero-row kv_norm and zero-token store, stacked and graph cells fail.
//  - kvconform probe: the same classes as our kernels: no rule breaker makes a call of zero rows.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>

#include "kvc/abi/struct_size.h"
#include "testkit/doubles/forward_to_ours.h"

namespace kvc::doubles {
namespace {

__global__ void one_block_per_row() {}

bool no_rows(const DLTensor* t) { return t != nullptr && t->ndim >= 1 && t->shape != nullptr && t->shape[0] == 0; }

// The planted launch: a grid as large as the rows, zero. Returns 401 with CUDA's text.
int launch_for_no_rows(void* stream, char* error, size_t capacity) {
  one_block_per_row<<<0, 128, 0, static_cast<cudaStream_t>(stream)>>>();
  const cudaError_t e = cudaGetLastError();  // reads and clears the launch error of this runtime
  if (capacity > 0)
    std::snprintf(error, capacity, "zero_block_launch: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
  return e == cudaSuccess ? KVC_STATUS_OK : KVC_STATUS_CUDA_ERROR;
}

}  // namespace
}  // namespace kvc::doubles

using kvc::doubles::launch_for_no_rows;
using kvc::doubles::no_rows;
using kvc::doubles::ours;

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_library_info, name)) return KVC_STATUS_BAD_ARGUMENT;
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = "test double zero_block_launch (our kernels, a zero-block grid for zero rows)";
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  return ours().kvc_op_support_get(op, format, kv_dtype, out);
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* a, void* stream, char* error, size_t n) {
  if (a != nullptr && a->struct_size >= KVC_ABI_END_OF(kvc_kv_only_insert_args, slot_mapping) &&
      no_rows(a->slot_mapping))
    return launch_for_no_rows(stream, error, n);
  return ours().kvc_kv_only_insert(a, stream, error, n);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* a, void* stream, char* error, size_t n) {
  if (a != nullptr && a->struct_size >= KVC_ABI_END_OF(kvc_legacy_insert_args, slot_mapping) &&
      no_rows(a->slot_mapping))
    return launch_for_no_rows(stream, error, n);
  return ours().kvc_legacy_insert(a, stream, error, n);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* a, void* stream, char* error, size_t n) {
  if (a != nullptr && a->struct_size >= KVC_ABI_END_OF(kvc_kv_norm_args, kv) && no_rows(a->kv))
    return launch_for_no_rows(stream, error, n);
  return ours().kvc_kv_norm(a, stream, error, n);
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* a, void* stream, char* error, size_t n) {
  if (a != nullptr && a->struct_size >= KVC_ABI_END_OF(kvc_store_rotated_args, indices) && no_rows(a->indices))
    return launch_for_no_rows(stream, error, n);
  return ours().kvc_store_rotated(a, stream, error, n);
}

KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* a, void* stream, char* error, size_t n) {
  if (a != nullptr && a->struct_size >= KVC_ABI_END_OF(kvc_stacked_ctx_kv_args, x) && no_rows(a->x))
    return launch_for_no_rows(stream, error, n);
  return ours().kvc_stacked_ctx_kv(a, stream, error, n);
}

}  // extern "C"
