// kv_insert.cu: the KV-only insert kernel (docs/contract.md §4 kv_only_insert), with kv_norm
// optionally fused in front.
//
// Built for memory throughput. The default shape, the fastest measured on the H200: a warp per
// row (lane L owns dims [16L, 16L + 16), two 16-byte loads) on a persistent grid (as many blocks
// as fit on the device), each warp looping over rows and loading the next row's slot and position
// while it encodes the current one, so that a row costs one memory round trip (its bytes and its
// RoPE table row together) instead of two. Measured alternatives, selectable for tuning: two rows
// per warp step (more bytes in flight per warp, but 94 registers instead of 55 halve the
// occupancy: 0.57 of copy against 0.78 for packed584 at 262144 tokens), a half-warp per row, one
// block per 8 rows instead of the persistent grid (0.67). Also measured and dropped: capping
// registers for 5 or 6 blocks per SM (spills, slower), and staging the next row in shared memory
// with cp.async (0.60). The packed formats cost about 310 warp instructions per row, so at 50%
// occupancy the kernel is as much issue-bound as memory-bound: every conversion is a single
// hardware instruction (pairs where the hardware has them) and the block exponent is computed
// from the bits. The encoding is kv_record.cuh's, shared with the legacy op.
#include "kvc/kernels/kv_insert.h"

#include "kv_record.cuh"
#include "launch_config.h"

namespace kvc::kernels {
namespace {

using namespace detail;

inline constexpr int kDefaultRowsPerWarp = 1;  // row steps a warp loads before the first encode
inline constexpr int kDefaultLanesPerRow = 32;

template <RecordFormat kFormat, bool kNorm, int kV, int kRows>
__global__ void __launch_bounds__(kThreadsPerBlock)
    kv_only_insert_kernel(KvRowsDev rows, CacheDev cache, const std::uint16_t* norm_weight, bool weight_aligned,
                          float norm_eps) {
  constexpr int kThreadsPerRow = kWarpLanes / kV;
  constexpr int kRowsPerStep = kV * kRows;  // rows a warp handles per loop step
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const int group = lane / kThreadsPerRow;          // which row of the kV rows side by side
  const int vlane0 = (lane % kThreadsPerRow) * kV;  // first virtual lane of this thread
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;
  std::int64_t warp =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / kWarpLanes;
  if (warp * kRowsPerStep >= rows.count) return;

  float w[kV][kLaneDims] = {};
  if constexpr (kNorm) {
#pragma unroll
    for (int j = 0; j < kV; ++j) load_norm_weight(norm_weight, weight_aligned, vlane0 + j, w[j]);
  }
  float fp8_inv = 0.0f;
  if constexpr (kFormat == RecordFormat::kFp8_512) fp8_inv = fp8_cache_inverse(cache);

  // Rows first + r*kV + group: the kV rows of one step sit side by side in the warp. A grid
  // smaller than the batch makes each warp loop; the next step's slots and positions are loaded
  // while this step is encoded, so each step costs one memory round trip (the rows and their
  // RoPE table rows together), not two.
  RowMeta meta[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t row = warp * kRowsPerStep + r * kV + group;
    meta[r] = row < rows.count ? load_row_meta(rows, row) : dead_row_meta();
  }
  for (; warp * kRowsPerStep < rows.count; warp += warps) {
    const std::int64_t first = warp * kRowsPerStep;
    KvSlice<kV> in[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t row = first + r * kV + group;
      in[r] = row < rows.count ? load_kv_slice<kV>(rows, cache, row, meta[r], vlane0) : dead_slice<kV>();
    }
    const std::int64_t next = first + warps * kRowsPerStep;
    if (next < rows.count) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const std::int64_t row = next + r * kV + group;
        meta[r] = row < rows.count ? load_row_meta(rows, row) : dead_row_meta();
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      insert_kv_slice<kFormat, false, kNorm, kV>(in[r], rows, cache, w, norm_eps, fp8_inv, vlane0);
  }
}

template <RecordFormat kFormat, bool kNorm, int kV, int kRows>
void launch(const KvOnlyInsertParams& p, cudaStream_t stream) {
  const std::int64_t warps = ceil_div(p.rows.count, kV * kRows);
  const bool weight_aligned = reinterpret_cast<std::uintptr_t>(p.norm.weight) % kAlignment == 0;
  constexpr auto kernel = &kv_only_insert_kernel<kFormat, kNorm, kV, kRows>;
  std::int64_t blocks = ceil_div(warps, kWarpsPerBlock);
  if (p.blocks_per_sm >= 0) blocks = std::min(blocks, resident_blocks<kernel>(p.blocks_per_sm));
  kernel<<<grid_x(blocks), kThreadsPerBlock, 0, stream>>>(to_device(p.rows), to_device(p.cache), p.norm.weight,
                                                          weight_aligned, p.norm.eps);
}

template <RecordFormat kFormat, bool kNorm, int kV>
void launch_rows(const KvOnlyInsertParams& p, cudaStream_t stream) {
  switch (p.rows_per_warp == 0 ? kDefaultRowsPerWarp : p.rows_per_warp) {
    case 2: return launch<kFormat, kNorm, kV, 2>(p, stream);
    default: return launch<kFormat, kNorm, kV, 1>(p, stream);
  }
}

template <RecordFormat kFormat, bool kNorm>
void launch_lanes(const KvOnlyInsertParams& p, cudaStream_t stream) {
  if ((p.lanes_per_row == 0 ? kDefaultLanesPerRow : p.lanes_per_row) == kWarpLanes)
    launch_rows<kFormat, kNorm, 1>(p, stream);
  else
    launch_rows<kFormat, kNorm, 2>(p, stream);
}

template <RecordFormat kFormat>
void launch_format(const KvOnlyInsertParams& p, cudaStream_t stream) {
  if (p.norm.weight != nullptr)
    launch_lanes<kFormat, true>(p, stream);
  else
    launch_lanes<kFormat, false>(p, stream);
}

}  // namespace

cudaError_t kv_only_insert(const KvOnlyInsertParams& p, cudaStream_t stream) {
  if (p.rows.count <= 0) return cudaSuccess;
  if (p.rows.fp16) return cudaErrorInvalidValue;
  switch (p.cache.format) {
    case RecordFormat::kPacked584: launch_format<RecordFormat::kPacked584>(p, stream); break;
    case RecordFormat::kPacked528: launch_format<RecordFormat::kPacked528>(p, stream); break;
    case RecordFormat::kFp8_512: launch_format<RecordFormat::kFp8_512>(p, stream); break;
    case RecordFormat::kBf16_512: launch_format<RecordFormat::kBf16_512>(p, stream); break;
  }
  return cudaGetLastError();
}

}  // namespace kvc::kernels
