// writes_out_of_range_rows.cu: a kernel library that does not skip rows whose slot lies outside
// the cache.
//
// Every call goes to our kernels (which skip such rows on the device, docs/contract.md §3.1 and
// §5.4); after an accepted insert, a kernel on the call's stream writes 0x5A over the record of
// every row t < M whose slot is >= num_blocks * block_size or negative, where the address
// arithmetic of a kernel without the skip puts it: page floor(slot / bs), token slot mod bs
// (SGLang's shift and mask: slot -1 is the last token of page -1), and the record's fields at the
// format's layout (packed: the data in the page's data region, the scale group after it; full
// caches: the row at token * stride(1)). A row just past the end lands in the cache's guard zone
// after it, slot -1 in the guard zone before it (or, for a cache at byte 0 of its mapping, in
// unmapped addresses), and a row far past the end in the unmapped range: a CUDA fault.
// Everything else (support, profile, validation) is declared as ours declares it.
// gpu_out_of_bounds_test and its fault child load it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>

#include "testkit/doubles/forward_to_ours.h"

namespace {

constexpr std::uint8_t kStray = 0x5A;

// One thread block per row: the row's record, if its slot is outside the cache, is overwritten.
__global__ void write_out_of_range_records(std::uint8_t* cache, const std::int64_t* slots, std::int64_t rows,
                                           std::int64_t block_size, std::int64_t num_blocks, std::int64_t page_stride,
                                           std::int64_t token_stride, int data_bytes, int scale_bytes, int paged) {
  const std::int64_t t = blockIdx.x;
  if (t >= rows) return;
  const std::int64_t slot = slots[t];
  if (slot >= 0 && slot < num_blocks * block_size) return;
  std::int64_t page = slot / block_size, token = slot % block_size;
  if (token < 0) token += block_size, page -= 1;  // floor division
  const std::int64_t page_at = page * page_stride;
  const std::int64_t data = page_at + token * (paged != 0 ? data_bytes : token_stride);
  for (int i = threadIdx.x; i < data_bytes; i += blockDim.x) cache[data + i] = kStray;
  if (paged == 0) return;
  const std::int64_t scales = page_at + block_size * data_bytes + token * scale_bytes;
  for (int i = threadIdx.x; i < scale_bytes; i += blockDim.x) cache[scales + i] = kStray;
}

int fail(char* error, size_t capacity, const char* what, cudaError_t e) {
  if (error != nullptr && capacity > 0)
    std::snprintf(error, capacity, "writes_out_of_range_rows: %s: %s", what, cudaGetErrorString(e));
  return KVC_STATUS_CUDA_ERROR;
}

// The stray records of one accepted call.
int write_strays(const DLTensor* kv_cache, const DLTensor* slot_mapping, std::int64_t block_size, std::int32_t mxfp8,
                 void* stream, char* error, size_t capacity) {
  const std::int64_t rows = slot_mapping->ndim >= 1 ? slot_mapping->shape[0] : 0;
  if (rows == 0 || kv_cache->ndim != 3 || block_size <= 0) return KVC_STATUS_OK;
  const std::int64_t element = (kv_cache->dtype.bits + 7) / 8;
  const std::int64_t page_stride =
      (kv_cache->strides != nullptr ? kv_cache->strides[0] : kv_cache->shape[1] * kv_cache->shape[2]) * element;
  const std::int64_t token_stride =
      (kv_cache->strides != nullptr ? kv_cache->strides[1] : kv_cache->shape[2]) * element;
  const bool packed = kv_cache->dtype.code == kDLUInt;
  const int data_bytes = packed ? (mxfp8 != 0 ? 512 : 576) : (kv_cache->dtype.bits == 16 ? 1024 : 512);
  const int scale_bytes = packed ? (mxfp8 != 0 ? 16 : 8) : 0;
  auto* cache = static_cast<std::uint8_t*>(kv_cache->data) + kv_cache->byte_offset;
  const auto* slots = reinterpret_cast<const std::int64_t*>(static_cast<const std::uint8_t*>(slot_mapping->data) +
                                                            slot_mapping->byte_offset);
  write_out_of_range_records<<<static_cast<unsigned>(rows), 128, 0, static_cast<cudaStream_t>(stream)>>>(
      cache, slots, rows, block_size, kv_cache->shape[0], page_stride, token_stride, data_bytes, scale_bytes,
      packed ? 1 : 0);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return fail(error, capacity, "launch", e);
  return KVC_STATUS_OK;
}

}  // namespace

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  const int rc = kvc::doubles::ours().kvc_library_info_get(out);
  if (rc == KVC_STATUS_OK && out != nullptr)
    out->name = "writes_out_of_range_rows (test double over kvconform-kernels)";
  return rc;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  return kvc::doubles::ours().kvc_op_support_get(op, format, kv_dtype, out);
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  const int rc = kvc::doubles::ours().kvc_kv_only_insert(args, stream, error, error_capacity);
  if (rc != KVC_STATUS_OK) return rc;
  return write_strays(args->kv_cache, args->slot_mapping, args->block_size, args->kv_mxfp8, stream, error,
                      error_capacity);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  const int rc = kvc::doubles::ours().kvc_legacy_insert(args, stream, error, error_capacity);
  if (rc != KVC_STATUS_OK) return rc;
  return write_strays(args->kv_cache, args->slot_mapping, args->block_size, args->kv_mxfp8, stream, error,
                      error_capacity);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return kvc::doubles::ours().kvc_kv_norm(args, stream, error, error_capacity);
}

}  // extern "C"
