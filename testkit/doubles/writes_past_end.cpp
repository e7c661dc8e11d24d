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

#include "testkit/doubles/insert_call_bytes.h"
#include "testkit/doubles/unvalidated_insert_exports.h"

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

// The planted step after every accepted insert call (unvalidated_insert_exports.h).
template <typename Args>
int plant_after_insert(const Args& a, void* stream, char* error, size_t n) {
  return write_past_end(a.kv_cache, a.slot_mapping, a.block_size, a.kv_mxfp8 != 0, stream, error, n);
}

}  // namespace kvc::doubles

KVC_DOUBLE_UNVALIDATED_INSERT_EXPORTS("test double writes_past_end (our kernels, then rows past the cache written)")
