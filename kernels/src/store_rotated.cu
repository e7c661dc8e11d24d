// store_rotated.cu: the store op kernel (docs/contract.md §6.4), profile vllm.
//
// One warp per row, lane L holding dims [16L, 16L + 16), the contract's execution model; a
// grid-stride loop over rows. A row's index is uniform across its warp, so a skipped row (index
// outside [0, capacity)) leaves the loop step as a whole warp and the block-absmax shuffles always
// run with every lane. The encoding is the insert kernels' (kv_record.cuh) without the rotation:
// every input value comes from bf16 storage, so f32(bf(x)) == x for all but NaN, and a NaN is
// treated alike by the absmax (ignored) and the clamp (-> 0xFE) whatever its payload; packed584
// stores the RoPE dims through bf() (a NaN payload becomes 0x7FFF: the rope policy `rotate`).
#include "kvc/kernels/store_rotated.h"

#include "kv_record.cuh"
#include "launch_config.h"

namespace kvc::kernels {
namespace {

using namespace detail;

template <typename Index>
__device__ __forceinline__ std::int64_t load_index(const Index* indices, std::int64_t row) {
  return static_cast<std::int64_t>(__ldg(indices + row));
}

template <RecordFormat kFormat, typename Index>
__global__ void __launch_bounds__(kThreadsPerBlock)
    store_rotated_kernel(const std::uint16_t* rows, const Index* indices, std::int64_t count, CacheDev cache) {
  constexpr int kDataBytes = layout_of(kFormat).data_bytes;
  constexpr int kScaleBytes = layout_of(kFormat).scale_bytes;
  constexpr int kLanesPerBlock = layout_of(kFormat).quant_block_dims / kLaneDims;
  constexpr bool kRopeQuantized = kFormat == RecordFormat::kPacked528;
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;
  for (std::int64_t row =
           static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / kWarpLanes;
       row < count; row += warps) {
    const std::int64_t slot = load_index(indices, row);
    if (slot < 0 || slot >= cache.capacity) continue;  // uniform across the warp
    float x[kLaneDims];
    const LaneBits bits = load_lane_bits_readonly(rows + row * kHeadDim + lane * kLaneDims);
    widen<false>(bits, x);
    const bool stored16 = !kRopeQuantized && is_rope_lane(lane);
    float amax = stored16 ? 0.0f : lane_absmax(x);
#pragma unroll
    for (int mask = 1; mask < kLanesPerBlock; mask <<= 1) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, mask));
    const DevBlockScale scale = ue8m0_block_scale(amax);

    std::int64_t index = 0;
    std::uint8_t* const page = page_of(cache, slot, index);
    std::uint8_t* const data = page + index * kDataBytes;
    std::uint8_t* const scales = page + cache.block_size * kDataBytes + index * kScaleBytes;
    if (stored16)
      store_lane_bits(data + kNopeDim + (lane - kFirstRopeLane) * kLaneDims * 2, narrow<false>(x));
    else
      store16(data + lane * kLaneDims, e4m3_lane_codes(x, scale.inverse));
    // The first lane of each quantization block writes its scale byte; in packed584 lane 28 (a
    // RoPE lane, no block of its own) writes the pad byte 7.
    if (lane % kLanesPerBlock == 0) scales[lane / kLanesPerBlock] = stored16 ? kScalePadByte : scale.byte;
  }
}

template <RecordFormat kFormat, typename Index>
void launch(const StoreRotatedParams& p, cudaStream_t stream) {
  store_rotated_kernel<kFormat, Index><<<grid_x(ceil_div(p.count, kWarpsPerBlock)), kThreadsPerBlock, 0, stream>>>(
      static_cast<const std::uint16_t*>(p.rows), static_cast<const Index*>(p.indices), p.count, to_device(p.cache));
}

template <RecordFormat kFormat>
void launch_format(const StoreRotatedParams& p, cudaStream_t stream) {
  if (p.indices_int32)
    launch<kFormat, std::int32_t>(p, stream);
  else
    launch<kFormat, std::int64_t>(p, stream);
}

}  // namespace

cudaError_t store_rotated(const StoreRotatedParams& p, cudaStream_t stream) {
  if (p.count <= 0) return cudaSuccess;
  switch (p.cache.format) {
    case RecordFormat::kPacked584: launch_format<RecordFormat::kPacked584>(p, stream); break;
    case RecordFormat::kPacked528: launch_format<RecordFormat::kPacked528>(p, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace kvc::kernels
