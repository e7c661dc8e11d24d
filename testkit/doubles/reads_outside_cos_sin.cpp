// reads_outside_cos_sin.cpp: the test double `reads_outside_cos_sin`
// (libkvc_double_reads_outside_cos_sin.so).
//
// Plants: a kernel that rotates rows whose position lies past the end of the cos/sin table,
// reading the table beyond its end. It runs our kernels (forward_to_ours.h), which skip such a
// row, and then, for every row t < M of kvc_kv_only_insert or kvc_legacy_insert with a slot
// inside the cache and a position >= the table's rows, copies 64 bytes of the table at
// cos_sin[position * 64 ..] (past its end) into the start of that slot's record (its first data
// bytes), with cudaMemcpyAsync on the call's stream: what a kernel that rotates with whatever
// lies there leaves behind. It does no validation of its own and declares KVC_VALIDATION_NONE for
// the insert ops; every other entry point is ours.
//
// Verdicts:
//  - kvconform probe: PositionAtMaxPos_{KvOnly,Legacy}_{Packed584,Packed528,Fp8_512,Bf16_512}
//    READ OUT OF BOUNDS, "row 0 position 32 outside cos_sin_cache's 32 rows, yet slot <s> was
//    written"; every other call as for our kernels, each insert rule "not declared enforced".
//  - kvconform run: the same result as our kernels (PASSED): no valid case holds a position past
//    the table, and the invalid suite reports the value rules skipped.
//  - gpu_invalid_input_test: InvalidInputThroughAbi/...PositionAtMaxPos_* fail (the row's record
//    is not left as the oracle's skipped row); under KVC_DEVICE_GUARDS=off compute-sanitizer's
//    memcheck reports the read past the cos/sin allocation.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>

#include "testkit/doubles/insert_call_bytes.h"
#include "testkit/doubles/unvalidated_insert_exports.h"

namespace kvc::doubles {
namespace {

// Bytes of the table read per row: 16 of the 64 fp32 entries of the row past the end.
constexpr size_t kReadBytes = 64;

// After our kernels accepted the call: the planted reads. Returns the status to give back.
int read_past_table(const DLTensor* cache, const DLTensor* slot_mapping, const DLTensor* positions,
                    const DLTensor* cos_sin, std::int64_t block_size, bool kv_mxfp8, void* stream, char* error,
                    size_t capacity) {
  CacheBytes c;
  if (!cache_bytes(cache, block_size, kv_mxfp8, &c) || cos_sin == nullptr || cos_sin->ndim != 2 ||
      cos_sin->shape == nullptr)
    return KVC_STATUS_OK;
  const std::int64_t table_rows = cos_sin->shape[0];
  const std::int64_t row_bytes = stride_of(*cos_sin, 0) * element_bytes(*cos_sin);
  const std::vector<std::int64_t> slots = int64_values(slot_mapping, stream);
  const std::vector<std::int64_t> position = int64_values(positions, stream);
  for (std::size_t t = 0; t < slots.size() && t < position.size(); ++t) {
    const std::int64_t slot = slots[t], p = position[t];
    if (slot < 0 || slot >= c.capacity() || p < table_rows) continue;
    std::uint8_t* record = c.base + (slot / c.block_size) * c.page_stride + (slot % c.block_size) * c.data_stride;
    const std::uint8_t* past_the_table = bytes_of(*cos_sin) + p * row_bytes;
    const cudaError_t e = cudaMemcpyAsync(record, past_the_table, kReadBytes, cudaMemcpyDeviceToDevice,
                                          static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) {
      if (capacity > 0)
        std::snprintf(error, capacity, "reads_outside_cos_sin: cudaMemcpyAsync: %s", cudaGetErrorString(e));
      return KVC_STATUS_CUDA_ERROR;
    }
  }
  return KVC_STATUS_OK;
}

}  // namespace

// The planted step after every accepted insert call (unvalidated_insert_exports.h).
template <typename Args>
int plant_after_insert(const Args& a, void* stream, char* error, size_t n) {
  return read_past_table(a.kv_cache, a.slot_mapping, a.position_ids, a.cos_sin_cache, a.block_size, a.kv_mxfp8 != 0,
                         stream, error, n);
}

}  // namespace kvc::doubles

KVC_DOUBLE_UNVALIDATED_INSERT_EXPORTS(
    "test double reads_outside_cos_sin (our kernels, then rows rotated from past the table)")
