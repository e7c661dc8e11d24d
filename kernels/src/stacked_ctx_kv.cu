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
// the layer's table, and one outside its row's committed prefix (commit lengths). The per-head
// norm and rotation are stacked_k_epilogue.cuh's, shared with the fused path (stacked_ctx_kv_fused.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kvc/kernels/device_numerics.cuh"
#include "kvc/kernels/stacked_ctx_kv.h"
#include "launch_config.h"
#include "projection_gemm.h"
#include "stacked_ctx_kv_fused.h"
#include "stacked_k_epilogue.cuh"

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
  const std::int64_t* commit_lens;  // null: every token committed
  std::int64_t commit_row_length;
  std::int64_t tokens;
  std::int64_t heads_per_token;  // sum of the covered layers' kv heads
  bool fp16;                     // storage dtype D
  // The profile's policies (StackedCtxKvParams::profile), as flags the kernel branches on.
  detail::StackedEpiloguePolicies policies;  // kUnspecified sums as the lane tree
  bool slot_zero_reserved;
  int num_layers;
  EpilogueLayer layer[kMaxStackedLayers];
};

using detail::stacked_widen;

constexpr int kEpilogueWarps = detail::kWarpsPerBlock;

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
    if (!detail::stacked_committed(a.commit_lens, a.commit_row_length, t)) continue;
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
      e[d] = stacked_widen(k_src[d], a.fp16);
      v_dst[d] = v_src[d];
    }
    __syncwarp();
    detail::stacked_k_norm_rope_warp(e, hd, lane, L.k_norm_weight, L.weight_fp16, L.eps, L.cos_sin + position * hd,
                                     a.fp16, k_dst, a.policies);
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
  a.commit_lens = p.commit_lens;
  a.commit_row_length = p.commit_row_length;
  a.tokens = p.tokens;
  a.fp16 = p.x_fp16;
  a.policies = detail::stacked_epilogue_policies(p.profile);
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
  // The fused path has no projection scratch: it stores the projection only when asked.
  if (p.path == StackedPath::kFused) {
    if (cudaError_t e = detail::launch_stacked_fused(p, stream); e != cudaSuccess)
      return cuda_failure(e, "launching the fused kernel");
    return {};
  }
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
