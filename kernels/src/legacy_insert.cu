// legacy_insert.cu: the legacy Q+KV insert and the full-cache Q paths (docs/contract.md §4).
//
// Work items per token: item 0 is the token's KV row (tokens t < rows.count only), items 1.. are
// its Q heads (packed caches: out_heads of them, live heads then zero-filled padding; full caches:
// heads). Every item is one warp's work, computed by the same code whatever the grid, with no
// arithmetic across warps: the per-token and large-batch grids give identical bytes.
#include "kvc/kernels/legacy_insert.h"

#include "kv_record.cuh"
#include "launch_config.h"

namespace kvc::kernels {
namespace {

using namespace detail;

struct QDev {
  const std::uint16_t* q;
  void* q_out;
  std::int64_t tokens;
  std::int64_t heads;
  std::int64_t out_heads;
  const float* q_scale_inv;
  float eps;
  bool norm;
  bool rope;
  bool interleaved;
};

struct LegacyDev {
  KvRowsDev rows;
  CacheDev cache;
  QDev q;
  std::int64_t items;  // per token: 1 + Q heads written
};

// Element offset of lane `lane`'s 16 dims of head h of token t in a [tokens, heads, 512] tensor:
// head-major (t*heads + h)*512 + 16*lane, or chunk-interleaved t*heads*512 + lane*heads*16 + h*16.
__device__ __forceinline__ std::int64_t head_offset(std::int64_t t, std::int64_t h, std::int64_t heads, int lane,
                                                    bool interleaved) {
  if (interleaved) return t * heads * kHeadDim + lane * heads * kLaneDims + h * kLaneDims;
  return (t * heads + h) * kHeadDim + lane * kLaneDims;
}

// Whether token t's Q heads are written: a head that needs the position (RoPE) and whose
// position lies outside [0, max_pos) writes nothing, so the caller's q_out keeps its bytes.
template <RecordFormat kFormat>
__device__ __forceinline__ bool q_rotates(const QDev& q) {
  return layout_of(kFormat).paged_regions ? q.rope : true;  // the full-cache Q paths always rotate
}

// The bits of Q head h of token t for this lane; padding heads (packed, h >= heads) read nothing.
template <RecordFormat kFormat>
__device__ __forceinline__ LaneBits load_q_head(const QDev& q, std::int64_t t, std::int64_t h, int lane) {
  constexpr bool kPacked = layout_of(kFormat).paged_regions;
  if (kPacked && h >= q.heads) return LaneBits{};
  return load_lane_bits(q.q + head_offset(t, h, q.heads, lane, kPacked && q.interleaved));
}

// Writes Q head h of token t from its loaded bits (and, on RoPE lanes of a rotating head, the
// position's table coefficients). The caller has checked the position. q may be the very buffer
// q_out points to (bf16_512 in place): each lane reads its 32 bytes before it writes the same 32
// bytes, and no other warp touches them.
template <RecordFormat kFormat, bool kFp16>
__device__ __forceinline__ void store_q_head(const QDev& q, std::int64_t t, std::int64_t h, int lane,
                                             const LaneBits& bits, const RopeCoeffs& coeffs) {
  constexpr bool kPacked = layout_of(kFormat).paged_regions;
  const bool interleaved = kPacked && q.interleaved;
  if constexpr (kPacked) {
    if (h >= q.heads) {
      store_lane_zeros(static_cast<std::uint16_t*>(q.q_out) + head_offset(t, h, q.out_heads, lane, interleaved));
      return;
    }
  }
  float x[1][kLaneDims];
  widen<kFp16>(bits, x[0]);
  if (q.norm) q_norm_lane(x, q.eps);
  if (q_rotates<kFormat>(q) && is_rope_lane(lane)) rope_lane(x[0], coeffs);
  const std::int64_t in_offset = head_offset(t, h, q.heads, lane, interleaved);
  if constexpr (kPacked) {
    store_lane_bits(static_cast<std::uint16_t*>(q.q_out) + head_offset(t, h, q.out_heads, lane, interleaved),
                    narrow<kFp16>(x[0]));
  } else if constexpr (kFormat == RecordFormat::kFp8_512) {
    // code = e4m3(clamp(fl(x * q_scale_inv))): no 16-bit rounding before the quantization.
    store16(static_cast<std::uint8_t*>(q.q_out) + in_offset, e4m3_lane_codes(x[0], __ldg(q.q_scale_inv)));
  } else {
    store_lane_bits(static_cast<std::uint16_t*>(q.q_out) + in_offset, narrow<kFp16>(x[0]));
  }
}

__device__ __forceinline__ bool position_in_table(std::int64_t position, const KvRowsDev& rows) {
  return position >= 0 && position < rows.max_pos;
}

// One Q head as its own work item (the per-token grid): the head's bits and its position are
// loaded together, then the table row: two memory round trips.
template <RecordFormat kFormat, bool kFp16>
__device__ __forceinline__ void q_head(const QDev& q, const KvRowsDev& rows, std::int64_t t, std::int64_t h, int lane) {
  const bool rotate = q_rotates<kFormat>(q);
  const LaneBits bits = load_q_head<kFormat>(q, t, h, lane);
  std::int64_t position = 0;
  if (rotate) {
    position = __ldg(rows.positions + t);
    if (!position_in_table(position, rows)) return;
  }
  const RopeCoeffs coeffs =
      rotate && is_rope_lane(lane) ? load_rope_coeffs(rows.cos_sin, position, lane) : RopeCoeffs{};
  store_q_head<kFormat, kFp16>(q, t, h, lane, bits, coeffs);
}

template <RecordFormat kFormat, bool kFp16>
__device__ __forceinline__ void legacy_item(const LegacyDev& p, std::int64_t t, std::int64_t item, int lane) {
  if (item == 0) {
    if (t >= p.rows.count) return;
    const KvSlice<1> in = load_kv_slice<1>(p.rows, p.cache, t, lane);
    const float fp8_inv = kFormat == RecordFormat::kFp8_512 ? fp8_cache_inverse(p.cache) : 0.0f;
    constexpr float kNoNormWeights[1][kLaneDims] = {};
    insert_kv_slice<kFormat, kFp16, false, 1>(in, p.rows, p.cache, kNoNormWeights, 0.0f, fp8_inv, lane);
  } else {
    q_head<kFormat, kFp16>(p.q, p.rows, t, item - 1, lane);
  }
}

// Q heads a token warp has in flight at once: their loads are issued together.
inline constexpr int kQHeadsInFlight = 4;

// All of token t's work in one warp (the large-batch grid): the position, the KV row and the
// first Q heads are loaded together, the table row once for the KV row and every head (they
// share the position), then the heads in groups of kQHeadsInFlight.
template <RecordFormat kFormat, bool kFp16>
__device__ __forceinline__ void legacy_token(const LegacyDev& p, std::int64_t t, int lane) {
  const KvRowsDev& rows = p.rows;
  const bool has_kv = t < rows.count;
  const std::int64_t position = __ldg(rows.positions + t);
  const RowMeta meta = has_kv ? RowMeta{__ldg(rows.slots + t), position} : dead_row_meta();
  KvSlice<1> kv;
  kv.meta = meta;
  kv.bits[0] = has_kv ? load_lane_bits_readonly(rows.kv + t * kHeadDim + lane * kLaneDims) : LaneBits{};
  LaneBits q_bits[kQHeadsInFlight];
#pragma unroll
  for (int j = 0; j < kQHeadsInFlight; ++j)
    q_bits[j] = j < p.q.out_heads ? load_q_head<kFormat>(p.q, t, j, lane) : LaneBits{};
  const bool in_table = position_in_table(position, rows);
  const RopeCoeffs coeffs =
      in_table && is_rope_lane(lane) ? load_rope_coeffs(rows.cos_sin, position, lane) : RopeCoeffs{};
  if (has_kv) {
    kv.rope[0] = coeffs;
    const float fp8_inv = kFormat == RecordFormat::kFp8_512 ? fp8_cache_inverse(p.cache) : 0.0f;
    constexpr float kNoNormWeights[1][kLaneDims] = {};
    insert_kv_slice<kFormat, kFp16, false, 1>(kv, rows, p.cache, kNoNormWeights, 0.0f, fp8_inv, lane);
  }
  if (q_rotates<kFormat>(p.q) && !in_table) return;
  for (std::int64_t h0 = 0; h0 < p.q.out_heads; h0 += kQHeadsInFlight) {
    if (h0 > 0) {
#pragma unroll
      for (int j = 0; j < kQHeadsInFlight; ++j)
        if (h0 + j < p.q.out_heads) q_bits[j] = load_q_head<kFormat>(p.q, t, h0 + j, lane);
    }
#pragma unroll
    for (int j = 0; j < kQHeadsInFlight; ++j)
      if (h0 + j < p.q.out_heads) store_q_head<kFormat, kFp16>(p.q, t, h0 + j, lane, q_bits[j], coeffs);
  }
}

// Per-token grid: block (x, y) serves token x, items [8y, 8y + 8); strides cover clamped grids.
template <RecordFormat kFormat, bool kFp16>
__global__ void __launch_bounds__(kThreadsPerBlock) legacy_per_token_kernel(LegacyDev p) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const int warp = static_cast<int>(threadIdx.x) / kWarpLanes;
  for (std::int64_t t = blockIdx.x; t < p.q.tokens; t += gridDim.x)
    for (std::int64_t item = static_cast<std::int64_t>(blockIdx.y) * kWarpsPerBlock + warp; item < p.items;
         item += static_cast<std::int64_t>(gridDim.y) * kWarpsPerBlock)
      legacy_item<kFormat, kFp16>(p, t, item, lane);
}

// Large-batch grid: a persistent grid of token warps (as many blocks as fit on the device), each
// warp taking tokens t, t + warps, ...
template <RecordFormat kFormat, bool kFp16>
__global__ void __launch_bounds__(kThreadsPerBlock) legacy_large_batch_kernel(LegacyDev p) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpLanes;
       t < p.q.tokens; t += warps)
    legacy_token<kFormat, kFp16>(p, t, lane);
}

template <RecordFormat kFormat, bool kFp16>
void launch(const LegacyDev& d, LegacyGrid grid, cudaStream_t stream) {
  if (grid == LegacyGrid::kPerToken) {
    const dim3 g(grid_x(d.q.tokens), grid_y(ceil_div(d.items, kWarpsPerBlock)));
    legacy_per_token_kernel<kFormat, kFp16><<<g, kThreadsPerBlock, 0, stream>>>(d);
  } else {
    constexpr auto kernel = &legacy_large_batch_kernel<kFormat, kFp16>;
    const std::int64_t blocks = std::min(ceil_div(d.q.tokens, kWarpsPerBlock), resident_blocks<kernel>());
    kernel<<<grid_x(blocks), kThreadsPerBlock, 0, stream>>>(d);
  }
}

template <RecordFormat kFormat>
void launch_dtype(const LegacyDev& d, bool fp16, LegacyGrid grid, cudaStream_t stream) {
  if (fp16)
    launch<kFormat, true>(d, grid, stream);
  else
    launch<kFormat, false>(d, grid, stream);
}

}  // namespace

cudaError_t legacy_insert(const LegacyInsertParams& p, cudaStream_t stream) {
  const std::int64_t q_items = p.out_heads;
  if (p.tokens <= 0 || (q_items == 0 && p.rows.count <= 0)) return cudaSuccess;
  // The bf16 full cache stores bf16; its fp16 form is rejected by validation (kKvDtype).
  if (p.cache.format == RecordFormat::kBf16_512 && p.rows.fp16) return cudaErrorInvalidValue;

  LegacyDev d;
  d.rows = to_device(p.rows);
  d.cache = to_device(p.cache);
  d.q = QDev{static_cast<const std::uint16_t*>(p.q),
             p.q_out,
             p.tokens,
             p.heads,
             p.out_heads,
             p.q_scale_inv,
             p.eps,
             p.q_norm,
             p.q_rope,
             p.q_interleaved};
  d.items = 1 + q_items;
  LegacyGrid grid = p.grid;
  if (grid == LegacyGrid::kAuto) grid = p.tokens < kTokenCutoff ? LegacyGrid::kPerToken : LegacyGrid::kLargeBatch;

  switch (p.cache.format) {
    case RecordFormat::kPacked584: launch_dtype<RecordFormat::kPacked584>(d, p.rows.fp16, grid, stream); break;
    case RecordFormat::kPacked528: launch_dtype<RecordFormat::kPacked528>(d, p.rows.fp16, grid, stream); break;
    case RecordFormat::kFp8_512: launch_dtype<RecordFormat::kFp8_512>(d, p.rows.fp16, grid, stream); break;
    case RecordFormat::kBf16_512: launch<RecordFormat::kBf16_512, false>(d, grid, stream); break;
  }
  return cudaGetLastError();
}

}  // namespace kvc::kernels
