// stacked_ctx_kv.cu: the stacked context-KV epilogue kernel and both paths (see stacked_ctx_kv.h).
//
// The epilogue: one warp per (token, layer, kv head). The warp stages the head's stored K in
// shared memory (widened) and copies its V to the pool; the sum of squares is taken in the
// declared order (docs/contract.md §4.5 step 2, §6.2.1): sequentially by lane 0 (the contract's
// chain), or as the lane tree (each lane its ceil(hd/32) contiguous dims with fma, then the §1.3
// butterfly); r is the correctly rounded rsqrt or the approximate reciprocal (PTX sqrt.approx,
// then a correctly rounded division); then every lane normalises and rotates its NeoX pairs
// (d, d + hd/2) under the declared contraction with explicitly rounded intrinsics, storing each
// value rounded to D, and writes K to the pool. Every policy is a kernel argument, so its branch
// is uniform across the warp and costs a predicate, not a divergence.
// A token with cache_loc < 0 (or 0 with slot 0 reserved) is skipped, as is (on the device, for
// unvalidated calls) one whose cache_loc lies outside either pool or whose position lies outside
// the layer's table.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kvc/kernels/device_numerics.cuh"
#include "kvc/kernels/stacked_ctx_kv.h"
#include "launch_config.h"
#include "projection_gemm.h"

namespace kvc::kernels {
namespace {

using detail::ceil_div;
using detail::grid_x;

// One layer as the epilogue sees it: where its columns are and where it writes.
struct EpilogueLayer {
  const std::uint16_t* k_norm_weight;
  const float* cos_sin;
  std::uint16_t* k_pool;
  std::uint16_t* v_pool;
  std::int64_t max_pos;
  std::int64_t k_slot_stride, v_slot_stride;
  std::int64_t slots;  // min of the two pools' slot counts
  std::int64_t column;
  int num_kv_heads;
  int head_dim;
  float eps;
  bool weight_fp16;
};

struct EpilogueArgs {
  const std::uint16_t* projection;
  std::int64_t ld;
  const std::int64_t* positions;
  const std::int64_t* cache_loc;
  std::int64_t tokens;
  std::int64_t heads_per_token;  // sum of the covered layers' kv heads
  bool fp16;                     // storage dtype D
  // The profile's policies (StackedCtxKvParams::profile), as flags the kernel branches on.
  bool rope_fma_pair;
  bool lane_tree;  // kLaneTree, and kUnspecified (summed as the lane tree)
  bool approximate_reciprocal;
  bool slot_zero_reserved;
  int num_layers;
  EpilogueLayer layer[kMaxStackedLayers];
};

__device__ __forceinline__ float widen(std::uint16_t v, bool fp16) {
  return fp16 ? fp16_bits_to_float(v) : bf16_bits_to_float(v);
}
__device__ __forceinline__ std::uint16_t narrow(float v, bool fp16) {
  return fp16 ? fp16_bits_from_float(v) : bf16_bits_from_float(v);
}

constexpr int kEpilogueWarps = detail::kWarpsPerBlock;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

// The K-norm's sum of squares over e[0..hd), the same value in every lane. Sequential: lane 0's
// fma chain in dim order, broadcast. Lane tree: lane L's chain over [L k, min(hd, (L + 1) k)),
// k = ceil(hd / 32) (empty lanes hold 0), then the butterfly of docs/contract.md §1.3 (masks 16,
// 8, 4, 2, 1, acc[L] + acc[L xor m]: IEEE addition commutes, so every lane ends with one value).
__device__ __forceinline__ float sum_of_squares(const float* e, int hd, int lane, bool lane_tree) {
  float acc = 0.0f;
  if (lane_tree) {
    const int per_lane = (hd + kWarpLanes - 1) / kWarpLanes;
    const int end = min(hd, (lane + 1) * per_lane);
    for (int d = lane * per_lane; d < end; ++d) acc = __fmaf_rn(e[d], e[d], acc);
    for (int m = kWarpLanes / 2; m >= 1; m /= 2) acc = __fadd_rn(acc, __shfl_xor_sync(kFullMask, acc, m));
    return acc;
  }
  if (lane == 0)
    for (int d = 0; d < hd; ++d) acc = __fmaf_rn(e[d], e[d], acc);
  return __shfl_sync(kFullMask, acc, 0);
}

// r from ms + eps: rsqrt_rn, or the approximate reciprocal: PTX sqrt.approx.f32 (relative error
// <= 2^-23), then the correctly rounded division 1/s (docs/contract.md §6.2.1: within 4 ulps).
__device__ __forceinline__ float k_norm_reciprocal(float mean_eps, bool approximate) {
  if (!approximate) return __frsqrt_rn(mean_eps);
  float root;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(root) : "f"(mean_eps));
  return __fdiv_rn(1.0f, root);
}

// One NeoX pair under the declared contraction: the contract's (rope_pair, docs/contract.md §2.7)
// or the CUDA pair, whose second output is fma(b, c, fl(a*s)).
__device__ __forceinline__ void rotate_pair(float& a, float& b, float c, float s, bool fma_pair) {
  if (!fma_pair) {
    rope_pair(a, b, c, s);
    return;
  }
  const float first = __fmaf_rn(a, c, -__fmul_rn(b, s));
  const float second = __fmaf_rn(b, c, __fmul_rn(a, s));
  a = first;
  b = second;
}

__global__ void __launch_bounds__(detail::kThreadsPerBlock) stacked_epilogue_kernel(EpilogueArgs a, int max_head_dim) {
  extern __shared__ float staged[];  // kEpilogueWarps * max_head_dim
  const int warp = static_cast<int>(threadIdx.x) / kWarpLanes;
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  float* e = staged + warp * max_head_dim;
  const std::int64_t tasks = a.tokens * a.heads_per_token;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kEpilogueWarps;
  for (std::int64_t task = static_cast<std::int64_t>(blockIdx.x) * kEpilogueWarps + warp; task < tasks;
       task += stride) {
    const std::int64_t t = task / a.heads_per_token;
    int head = static_cast<int>(task % a.heads_per_token);
    int l = 0;
    while (head >= a.layer[l].num_kv_heads) head -= a.layer[l++].num_kv_heads;
    const EpilogueLayer& L = a.layer[l];
    const std::int64_t slot = a.cache_loc[t];
    const std::int64_t position = a.positions[t];
    if (slot < (a.slot_zero_reserved ? 1 : 0) || slot >= L.slots || position < 0 || position >= L.max_pos) continue;

    const int hd = L.head_dim;
    const std::int64_t kv_size = static_cast<std::int64_t>(L.num_kv_heads) * hd;
    const std::uint16_t* k_src = a.projection + t * a.ld + L.column + static_cast<std::int64_t>(head) * hd;
    const std::uint16_t* v_src = k_src + kv_size;
    std::uint16_t* k_dst = L.k_pool + slot * L.k_slot_stride + static_cast<std::int64_t>(head) * hd;
    std::uint16_t* v_dst = L.v_pool + slot * L.v_slot_stride + static_cast<std::int64_t>(head) * hd;
    for (int d = lane; d < hd; d += kWarpLanes) {
      e[d] = widen(k_src[d], a.fp16);
      v_dst[d] = v_src[d];
    }
    __syncwarp();
    const float sum = sum_of_squares(e, hd, lane, a.lane_tree);
    const float inv_hd = __fdiv_rn(1.0f, static_cast<float>(hd));
    const float r = k_norm_reciprocal(__fmaf_rn(sum, inv_hd, L.eps), a.approximate_reciprocal);
    const int half = hd / 2;
    const float* cs = L.cos_sin + position * hd;
    for (int d = lane; d < half; d += kWarpLanes) {
      // The stored normed K (rounded to D), then the rotation, then the stored rotated K.
      float first =
          widen(narrow(__fmul_rn(__fmul_rn(e[d], r), widen(L.k_norm_weight[d], L.weight_fp16)), a.fp16), a.fp16);
      float second =
          widen(narrow(__fmul_rn(__fmul_rn(e[d + half], r), widen(L.k_norm_weight[d + half], L.weight_fp16)), a.fp16),
                a.fp16);
      rotate_pair(first, second, cs[d], cs[half + d], a.rope_fma_pair);
      k_dst[d] = narrow(first, a.fp16);
      k_dst[d + half] = narrow(second, a.fp16);
    }
    __syncwarp();  // the next task of this warp overwrites `e`
  }
}

EpilogueLayer epilogue_layer(const StackedLayerDevice& d, std::int64_t column) {
  EpilogueLayer e{};
  e.k_norm_weight = d.k_norm_weight;
  e.cos_sin = d.cos_sin;
  e.k_pool = d.k_pool;
  e.v_pool = d.v_pool;
  e.max_pos = d.max_pos;
  e.k_slot_stride = d.k_slot_stride;
  e.v_slot_stride = d.v_slot_stride;
  e.slots = std::min(d.k_slots, d.v_slots);
  e.column = column;
  e.num_kv_heads = static_cast<int>(d.num_kv_heads);
  e.head_dim = static_cast<int>(d.head_dim);
  e.eps = d.eps;
  e.weight_fp16 = d.weight_fp16;
  return e;
}

// One epilogue launch over layers [first, first + count).
cudaError_t launch_epilogue(const StackedCtxKvParams& p, const std::uint16_t* projection, std::int64_t ld, int first,
                            int count, cudaStream_t stream) {
  EpilogueArgs a{};
  a.projection = projection;
  a.ld = ld;
  a.positions = p.positions;
  a.cache_loc = p.cache_loc;
  a.tokens = p.tokens;
  a.fp16 = p.x_fp16;
  a.rope_fma_pair = p.profile.rope == StackedRope::kCudaFmaPair;
  a.lane_tree = p.profile.reduction != KNormReduction::kSequential;
  a.approximate_reciprocal = p.profile.reciprocal == KNormReciprocal::kApproximate;
  a.slot_zero_reserved = p.profile.cache_loc == CacheLocPolicy::kSlotZeroReserved;
  a.num_layers = count;
  int max_head_dim = 0;
  std::int64_t column = 0;
  for (int l = 0; l < first; ++l) column += 2 * p.layers[l].num_kv_heads * p.layers[l].head_dim;
  for (int i = 0; i < count; ++i) {
    const StackedLayerDevice& d = p.layers[first + i];
    a.layer[i] = epilogue_layer(d, column);
    column += 2 * d.num_kv_heads * d.head_dim;
    a.heads_per_token += d.num_kv_heads;
    max_head_dim = std::max(max_head_dim, static_cast<int>(d.head_dim));
  }
  const std::int64_t tasks = a.tokens * a.heads_per_token;
  if (tasks == 0) return cudaSuccess;
  const std::size_t shared = static_cast<std::size_t>(kEpilogueWarps) * max_head_dim * sizeof(float);
  stacked_epilogue_kernel<<<grid_x(ceil_div(tasks, kEpilogueWarps)), detail::kThreadsPerBlock, shared, stream>>>(
      a, max_head_dim);
  return cudaGetLastError();
}

LaunchStatus cuda_failure(cudaError_t e, const char* what) {
  return LaunchStatus{LaunchStatus::Kind::kCudaError,
                      std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

// One projection GEMM of `rows` weight rows into columns [column, column + rows).
LaunchStatus project(const StackedCtxKvParams& p, const std::uint16_t* weight, const std::uint16_t* bias, bool w_fp16,
                     std::int64_t rows, std::uint16_t* projection, std::int64_t ld, std::int64_t column,
                     cudaStream_t stream) {
  detail::GemmOperands g;
  g.x = p.x;
  g.x_fp16 = p.x_fp16;
  g.tokens = p.tokens;
  g.hidden = p.hidden;
  g.w = weight;
  g.w_fp16 = w_fp16;
  g.rows = rows;
  g.bias = bias;
  g.out = projection + column;
  g.out_ld = ld;
  g.out_fp16 = p.x_fp16;
  if (p.gemm == ProjectionGemm::kCublas) {
    if (g.x_fp16 != g.w_fp16)
      return LaunchStatus{LaunchStatus::Kind::kUnsupported, "the cuBLAS GEMM needs x and the weights in one dtype"};
    if (std::string e = detail::cublas_gemm(g, stream); !e.empty())
      return LaunchStatus{LaunchStatus::Kind::kCudaError, "cuBLAS projection: " + e};
    return {};
  }
  if (cudaError_t e = detail::exact_order_gemm(g, stream); e != cudaSuccess)
    return cuda_failure(e, "launching the exact-order projection GEMM");
  return {};
}

LaunchStatus run_paths(const StackedCtxKvParams& p, std::uint16_t* projection, std::int64_t width,
                       cudaStream_t stream) {
  if (p.path == StackedPath::kStacked) {
    if (LaunchStatus s =
            project(p, p.stacked_weight, p.stacked_bias, p.layers[0].weight_fp16, width, projection, width, 0, stream);
        !s.ok())
      return s;
    if (cudaError_t e = launch_epilogue(p, projection, width, 0, p.num_layers, stream); e != cudaSuccess)
      return cuda_failure(e, "launching the stacked epilogue");
    return {};
  }
  std::int64_t column = 0;
  for (int l = 0; l < p.num_layers; ++l) {
    const StackedLayerDevice& d = p.layers[l];
    const std::int64_t rows = 2 * d.num_kv_heads * d.head_dim;
    if (LaunchStatus s = project(p, d.kv_weight, d.kv_bias, d.weight_fp16, rows, projection, width, column, stream);
        !s.ok())
      return s;
    if (cudaError_t e = launch_epilogue(p, projection, width, l, 1, stream); e != cudaSuccess)
      return cuda_failure(e, "launching a layer's epilogue");
    column += rows;
  }
  return {};
}

}  // namespace

LaunchStatus stacked_ctx_kv(const StackedCtxKvParams& p, cudaStream_t stream) {
  if (p.tokens == 0 || p.num_layers == 0) return {};
  std::int64_t width = 0;
  for (int l = 0; l < p.num_layers; ++l) width += 2 * p.layers[l].num_kv_heads * p.layers[l].head_dim;
  std::uint16_t* projection = p.projection;
  if (projection == nullptr) {
    void* scratch = nullptr;
    const std::size_t bytes = static_cast<std::size_t>(p.tokens * width) * sizeof(std::uint16_t);
    if (cudaError_t e = cudaMallocAsync(&scratch, bytes, stream); e != cudaSuccess)
      return cuda_failure(e, "cudaMallocAsync of the projection");
    projection = static_cast<std::uint16_t*>(scratch);
  }
  const LaunchStatus s = run_paths(p, projection, width, stream);
  if (projection != p.projection) {
    if (cudaError_t e = cudaFreeAsync(projection, stream); e != cudaSuccess && s.ok())
      return cuda_failure(e, "cudaFreeAsync of the projection");
  }
  return s;
}

}  // namespace kvc::kernels
