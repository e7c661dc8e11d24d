// kv_record.cuh: KV rows -> their record bytes in each of the four formats (docs/contract.md §3).
//
// The KV-only kernel and the legacy kernel's KV warps both call insert_kv_slice(), so the two ops
// cannot differ in a cache byte (the DSpark claim of docs/contract.md §4). A thread holds kV
// consecutive virtual lanes of one row (kV = 1: a warp per row, the contract's execution model
// verbatim; kV = 2: a half-warp per row, two rows per warp); every dim goes through the same
// arithmetic either way. A row is loaded first (load_kv_slice: its bytes and, once its position is
// known, its RoPE table row) and encoded second, so a kernel can keep loads in flight across rows;
// the KV-only kernel loads the next row's slot and position ahead (RowMeta) so that the bytes and
// the table row go out together.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "kvc/kernels/kv_insert.h"
#include "lane_io.cuh"
#include "rms_norm.cuh"
#include "rope.cuh"

namespace kvc::kernels::detail {

// The pad byte 7 of a packed584 scale group. KVC_KERNELS_PLANTED_DEFECT builds a test-only
// library (libkvconform_kernels_planted.so) that writes 0x01 instead, for the fuzz tests to find.
#if KVC_KERNELS_PLANTED_DEFECT
inline constexpr std::uint8_t kWrittenScalePadByte = 0x01;
#else
inline constexpr std::uint8_t kWrittenScalePadByte = kScalePadByte;
#endif

// Device copies of the host parameter structs, with what the kernels derive once on the host.
struct KvRowsDev {
  const std::uint16_t* kv;
  std::int64_t count;
  const std::int64_t* slots;
  const std::int64_t* positions;
  const float* cos_sin;
  std::int64_t max_pos;
};

struct CacheDev {
  std::uint8_t* base;
  std::int64_t block_size;
  int block_shift;        // log2(block_size) when it is a power of two (production), else -1
  std::int64_t capacity;  // num_blocks * block_size: slots at or past it are skipped
  std::int64_t page_stride;
  std::int64_t token_stride;
  const float* fp8_scale;
};

inline KvRowsDev to_device(const KvRows& r) {
  return KvRowsDev{static_cast<const std::uint16_t*>(r.kv), r.count, r.slots, r.positions, r.cos_sin, r.max_pos};
}
inline CacheDev to_device(const CacheTarget& c) {
  int shift = -1;
  if (c.block_size > 0 && (c.block_size & (c.block_size - 1)) == 0) {
    shift = 0;
    while ((std::int64_t{1} << shift) < c.block_size) ++shift;
  }
  return CacheDev{static_cast<std::uint8_t*>(c.base),
                  c.block_size,
                  shift,
                  c.num_blocks * c.block_size,
                  c.page_stride_bytes,
                  c.token_stride_bytes,
                  c.fp8_scale};
}

// Where a row goes: its slot and position, loaded ahead of the row itself when a kernel
// prefetches them (a dead row has slot -1 and writes nothing).
struct RowMeta {
  std::int64_t slot;
  std::int64_t position;
};

__device__ __forceinline__ RowMeta dead_row_meta() { return RowMeta{-1, 0}; }

// Row `row` < rows.count (those may always be read).
__device__ __forceinline__ RowMeta load_row_meta(const KvRowsDev& rows, std::int64_t row) {
  return RowMeta{__ldg(rows.slots + row), __ldg(rows.positions + row)};
}

__device__ __forceinline__ bool row_is_live(const RowMeta& m, const KvRowsDev& rows, const CacheDev& cache) {
  return m.slot >= 0 && m.slot < cache.capacity && m.position >= 0 && m.position < rows.max_pos;
}

// What one thread holds of one row: kV virtual lanes' bits, the row's slot and position, and the
// RoPE lanes' table coefficients (loaded only for live rows, so a dead row's position is never
// used as an address).
template <int kV>
struct KvSlice {
  LaneBits bits[kV];
  RopeCoeffs rope[kV];
  RowMeta meta;
};

// A slice that writes nothing (a row past the end of the batch).
template <int kV>
__device__ __forceinline__ KvSlice<kV> dead_slice() {
  KvSlice<kV> s{};
  s.meta = dead_row_meta();
  return s;
}

// Row `row` < rows.count with its already loaded meta; virtual lanes [vlane0, vlane0 + kV). The
// bits and the table coefficients are issued together: one memory round trip.
template <int kV>
__device__ __forceinline__ KvSlice<kV> load_kv_slice(const KvRowsDev& rows, const CacheDev& cache, std::int64_t row,
                                                     const RowMeta& meta, int vlane0) {
  KvSlice<kV> s;
  s.meta = meta;
  const std::uint16_t* p = rows.kv + row * kHeadDim + vlane0 * kLaneDims;
#pragma unroll
  for (int j = 0; j < kV; ++j) s.bits[j] = load_lane_bits_readonly(p + j * kLaneDims);
  const bool live = row_is_live(meta, rows, cache);
#pragma unroll
  for (int j = 0; j < kV; ++j)
    s.rope[j] =
        live && is_rope_lane(vlane0 + j) ? load_rope_coeffs(rows.cos_sin, meta.position, vlane0 + j) : RopeCoeffs{};
  return s;
}

// The same without a prefetched meta: the table loads wait for the position.
template <int kV>
__device__ __forceinline__ KvSlice<kV> load_kv_slice(const KvRowsDev& rows, const CacheDev& cache, std::int64_t row,
                                                     int vlane0) {
  return load_kv_slice<kV>(rows, cache, row, load_row_meta(rows, row), vlane0);
}

// The per-launch constant of fp8_512: inv = fl(1 / fp8_scale), computed on the device because the
// scale lives there.
__device__ __forceinline__ float fp8_cache_inverse(const CacheDev& cache) {
  return __fdiv_rn(1.0f, __ldg(cache.fp8_scale));
}

// Page and index of a slot in [0, capacity).
__device__ __forceinline__ std::uint8_t* page_of(const CacheDev& cache, std::int64_t slot, std::int64_t& index) {
  std::int64_t block;
  if (cache.block_shift >= 0) {
    block = slot >> cache.block_shift;
    index = slot & (cache.block_size - 1);
  } else {
    block = slot / cache.block_size;
    index = slot - block * cache.block_size;
  }
  return cache.base + block * cache.page_stride;
}

// Encodes and stores one row per group of 32 / kV threads. Rows whose slot lies outside
// [0, capacity) or whose position lies outside [0, max_pos) write nothing. Every thread of the
// warp must call it (the shuffles of kv_norm and of the block absmax); `norm_w` holds the thread's
// kv_norm weights (kNorm only), `fp8_inv` is fp8_cache_inverse() (fp8_512 only).
template <RecordFormat kFormat, bool kFp16, bool kNorm, int kV>
__device__ __forceinline__ void insert_kv_slice(const KvSlice<kV>& in, const KvRowsDev& rows, const CacheDev& cache,
                                                const float (&norm_w)[kV][kLaneDims], float norm_eps, float fp8_inv,
                                                int vlane0) {
  const bool live = row_is_live(in.meta, rows, cache);
  if (!__any_sync(kFullMask, live)) return;  // uniform: the whole warp leaves or stays

  float x[kV][kLaneDims];
#pragma unroll
  for (int j = 0; j < kV; ++j) widen<kFp16>(in.bits[j], x[j]);
  if constexpr (kNorm) kv_norm_lanes<kV>(x, norm_w, norm_eps);
#pragma unroll
  for (int j = 0; j < kV; ++j)
    if (live && is_rope_lane(vlane0 + j)) rope_lane(x[j], in.rope[j]);

  std::int64_t index = 0;
  std::uint8_t* const page = live ? page_of(cache, in.meta.slot, index) : nullptr;

  if constexpr (kFormat == RecordFormat::kPacked584 || kFormat == RecordFormat::kPacked528) {
    constexpr int kDataBytes = layout_of(kFormat).data_bytes;
    constexpr int kScaleBytes = layout_of(kFormat).scale_bytes;
    constexpr int kLanesPerBlock = layout_of(kFormat).quant_block_dims / kLaneDims;
    static_assert(kLanesPerBlock % kV == 0, "a thread's lanes lie in one quantization block");
    constexpr int kThreadsPerBlock = kLanesPerBlock / kV;
    constexpr bool kRopeQuantized = kFormat == RecordFormat::kPacked528;
    // y = f32(round16(x)). Only the rotated dims can change: every other value came from 16-bit
    // storage (or kv_norm's bf16 round trip) and round-trips exactly; a NaN stays a NaN, and the
    // encoding below does not look at NaN payloads. In packed584 the rotated dims are stored, not
    // quantized: their rounded bits are all that is needed.
    LaneBits rounded[kV] = {};
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      if (is_rope_lane(vlane0 + j)) {
        rounded[j] = narrow<kFp16>(x[j]);
        if constexpr (kRopeQuantized) widen<kFp16>(rounded[j], x[j]);
      }
    }
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kV; ++j)
      if (kRopeQuantized || !is_rope_lane(vlane0 + j)) amax = fmaxf(amax, lane_absmax(x[j]));
#pragma unroll
    for (int mask = 1; mask < kThreadsPerBlock; mask <<= 1) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, mask));
    const DevBlockScale scale = ue8m0_block_scale(amax);
    if (!live) return;
    std::uint8_t* const data = page + index * kDataBytes;
    std::uint8_t* const scales = page + cache.block_size * kDataBytes + index * kScaleBytes;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const int v = vlane0 + j;
      if (!kRopeQuantized && is_rope_lane(v))
        store_lane_bits(data + kNopeDim + (v - kFirstRopeLane) * kLaneDims * 2, rounded[j]);
      else
        store16(data + v * kLaneDims, e4m3_lane_codes(x[j], scale.inverse));
    }
    // The first virtual lane of each block writes its scale byte: one byte store instruction for
    // the record's whole scale group. In packed584, lane 28 (a RoPE lane, no block of its own)
    // writes the pad byte 7.
    if (vlane0 % kLanesPerBlock == 0)
      scales[vlane0 / kLanesPerBlock] = (!kRopeQuantized && is_rope_lane(vlane0)) ? kWrittenScalePadByte : scale.byte;
  } else if constexpr (kFormat == RecordFormat::kFp8_512) {
    if (!live) return;
    // No bf16 round trip: the RoPE dims are quantized from the fp32 rotation result.
    std::uint8_t* const row = page + index * cache.token_stride;
#pragma unroll
    for (int j = 0; j < kV; ++j) store16(row + (vlane0 + j) * kLaneDims, e4m3_lane_codes(x[j], fp8_inv));
  } else {
    static_assert(kFormat == RecordFormat::kBf16_512, "four formats");
    if (!live) return;
    // Every dim through bf(): input bits except NaN -> 0x7FFF, RoPE dims rounded once.
    std::uint8_t* const row = page + index * cache.token_stride;
#pragma unroll
    for (int j = 0; j < kV; ++j) store_lane_bits(row + (vlane0 + j) * kLaneDims * 2, narrow<kFp16>(x[j]));
  }
}

}  // namespace kvc::kernels::detail
