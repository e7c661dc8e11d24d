// writes_past_end.cpp: the test double `writes_past_end` (libkvc_double_writes_past_end.so).
//
// Plants: a kernel that writes rows whose slot is past the end of the cache. It runs our kernels
// (forward_to_ours.h), which skip such a row, and then, for every row t < M of kvc_kv_only_insert
// or kvc_legacy_insert whose slot is >= num_blocks * block_size, writes the record width of 0x5A
// bytes where that slot's record would be: cache base + (slot / block_size) * page stride +
// (slot % block_size) * width, with cudaMemsetAsync on the call's stream (slot_mapping is read to
// the host with a copy on that stream first; nothing is planted while the stream is captured). It
// declares KVC_VALIDATION_NONE for the insert ops (and forwards our metadata validation anyway);
// every other entry point is ours.
//
// Verdicts:
//  - kvconform probe: SlotBeyondTheCache_{KvOnly,Legacy}_{Packed584,Packed528,Fp8_512,Bf16_512}
//    WROTE OUT OF BOUNDS, "kv_cache (backing) guard after +<offset> ... (row 0, slot 32)"; every
//    other call as for our kernels, each insert rule marked "not declared enforced".
//  - kvconform run: the same result as our kernels (PASSED): no valid case holds a slot past the
//    cache and its invalid suite reports the value rules skipped. That is what the probe is for.
//  - gpu_invalid_input_test: InvalidInputThroughAbi/...SlotBeyondTheCache_* fail (the device
//    backend throws BufferDamageError: the cache's guard after was written).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>

#include "kvc/abi/struct_size.h"
#include "testkit/doubles/forward_to_ours.h"
#include "testkit/doubles/insert_call_bytes.h"

namespace kvc::doubles {
namespace {

constexpr unsigned char kPlantedByte = 0x5A;

// After our kernels accepted the call: the planted writes. Returns the status to give back.
int write_past_end(const DLTensor* cache, const DLTensor* slot_mapping, std::int64_t block_size, bool kv_mxfp8,
                   void* stream, char* error, size_t capacity) {
  CacheBytes c;
  if (!cache_bytes(cache, block_size, kv_mxfp8, &c)) return KVC_STATUS_OK;
  for (std::int64_t slot : int64_values(slot_mapping, stream)) {
    if (slot < c.capacity()) continue;
    std::uint8_t* record = c.base + (slot / c.block_size) * c.page_stride + (slot % c.block_size) * c.width;
    const cudaError_t e =
        cudaMemsetAsync(record, kPlantedByte, static_cast<size_t>(c.width), static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) {
      if (capacity > 0) std::snprintf(error, capacity, "writes_past_end: cudaMemsetAsync: %s", cudaGetErrorString(e));
      return KVC_STATUS_CUDA_ERROR;
    }
  }
  return KVC_STATUS_OK;
}

}  // namespace
}  // namespace kvc::doubles

using kvc::doubles::ours;

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_library_info, name)) return KVC_STATUS_BAD_ARGUMENT;
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = "test double writes_past_end (our kernels, then rows past the cache written)";
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  const int rc = ours().kvc_op_support_get(op, format, kv_dtype, out);
  const bool insert = op == KVC_OP_KV_ONLY_INSERT || op == KVC_OP_LEGACY_INSERT || op == KVC_OP_KV_ONLY_INSERT_KV_NORM;
  if (rc == KVC_STATUS_OK && insert && out->struct_size >= KVC_ABI_END_OF(kvc_op_support, validation))
    out->validation = KVC_VALIDATION_NONE;
  return rc;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* a, void* stream, char* error, size_t n) {
  const int rc = ours().kvc_kv_only_insert(a, stream, error, n);
  if (rc != KVC_STATUS_OK) return rc;
  return kvc::doubles::write_past_end(a->kv_cache, a->slot_mapping, a->block_size, a->kv_mxfp8 != 0, stream, error, n);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* a, void* stream, char* error, size_t n) {
  const int rc = ours().kvc_legacy_insert(a, stream, error, n);
  if (rc != KVC_STATUS_OK) return rc;
  return kvc::doubles::write_past_end(a->kv_cache, a->slot_mapping, a->block_size, a->kv_mxfp8 != 0, stream, error, n);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* a, void* stream, char* error, size_t n) {
  return ours().kvc_kv_norm(a, stream, error, n);
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* a, void* stream, char* error, size_t n) {
  return ours().kvc_store_rotated(a, stream, error, n);
}

KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* a, void* stream, char* error, size_t n) {
  return ours().kvc_stacked_ctx_kv(a, stream, error, n);
}

}  // extern "C"
