// insert_call_bytes.h: what the planting doubles read of an insert call after our kernels ran it:
// the cache tensor's geometry in bytes, and slot or position values copied to the host on the
// call's stream. Host code over the CUDA runtime; nothing here launches or writes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kvc/kernel_abi.h"

namespace kvc::doubles {

inline std::int64_t element_bytes(const DLTensor& t) { return (t.dtype.bits * t.dtype.lanes + 7) / 8; }

// Stride of dimension d in elements (DLPack: NULL strides are compact row-major).
inline std::int64_t stride_of(const DLTensor& t, int d) {
  if (t.strides != nullptr) return t.strides[d];
  std::int64_t s = 1;
  for (int i = d + 1; i < t.ndim; ++i) s *= t.shape[i];
  return s;
}

inline std::uint8_t* bytes_of(const DLTensor& t) { return static_cast<std::uint8_t*>(t.data) + t.byte_offset; }

// An insert call's cache as the doubles address it, in bytes: token i of page p is the row at
// base + p * page_stride + i * token_stride (width bytes); its data region starts at base + p *
// page_stride + i * data_stride (packed pages hold every token's data, then every token's scales:
// docs/contract.md §3; full caches are rows).
struct CacheBytes {
  std::uint8_t* base = nullptr;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;  // the op's block_size argument
  std::int64_t page_stride = 0;
  std::int64_t token_stride = 0;
  std::int64_t width = 0;
  std::int64_t data_stride = 0;
  std::int64_t capacity() const { return num_blocks * block_size; }
};

// False for a cache that is not a 3-D tensor with a positive block size.
inline bool cache_bytes(const DLTensor* cache, std::int64_t block_size, bool kv_mxfp8, CacheBytes* out) {
  if (cache == nullptr || cache->ndim != 3 || cache->shape == nullptr || block_size <= 0) return false;
  const std::int64_t e = element_bytes(*cache);
  out->base = bytes_of(*cache);
  out->num_blocks = cache->shape[0];
  out->block_size = block_size;
  out->page_stride = stride_of(*cache, 0) * e;
  out->token_stride = stride_of(*cache, 1) * e;
  out->width = cache->shape[2] * e;
  const bool packed = cache->dtype.code == kDLUInt && cache->dtype.bits == 8;
  out->data_stride = packed ? (kv_mxfp8 ? 512 : 576) : out->token_stride;  // packed528 / packed584 data bytes
  return true;
}

// The values of a 1-D int64 tensor, copied to the host on `stream` (after everything enqueued
// there, waited for). Empty on any error, and while the stream is being captured into a graph
// (a capture cannot wait): a double plants nothing then.
inline std::vector<std::int64_t> int64_values(const DLTensor* t, void* stream) {
  std::vector<std::int64_t> values;
  if (t == nullptr || t->ndim != 1 || t->shape == nullptr || t->dtype.code != kDLInt || t->dtype.bits != 64 ||
      t->shape[0] <= 0 || stride_of(*t, 0) <= 0)
    return values;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) return values;
  const std::int64_t n = t->shape[0], step = stride_of(*t, 0);
  std::vector<std::int64_t> raw(static_cast<std::size_t>((n - 1) * step + 1));
  if (cudaMemcpyAsync(raw.data(), bytes_of(*t), raw.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost, s) !=
          cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess)
    return values;
  for (std::int64_t i = 0; i < n; ++i) values.push_back(raw[static_cast<std::size_t>(i * step)]);
  return values;
}

}  // namespace kvc::doubles
