// stacked_ctx_kv_fused.cu: the stacked op's fused path (see stacked_ctx_kv_fused.h).
//
// One block of 128 threads per (token, layer, kv head) task, striding over the tasks. The block
// computes the head's 2 * hd projection rows (its K rows, then its V rows, from the layer's own
// weight), thread i owning rows i, i + 128, ...: each element is the contract's chain
// acc = __fmaf_rn(x[t][c], w[r][c], acc) over c = 0, 1, ..., hidden - 1 from +0 (x staged in
// shared memory 256 columns at a time, which splits the loop and never reorders it), then
// fl(acc + b) with a bias, then one rounding to D: the exact-order GEMM's element
// (projection_gemm.cu) bit for bit. V goes to the pool, the stored K (widened) to shared memory,
// and warp 0 runs the shared per-head epilogue (stacked_k_epilogue.cuh) on it. The projection is
// written out only when the caller gave `projection`; a task whose token writes nothing (not
// committed, cache_loc < 0, or out of range on the device) is skipped whole unless it must store
// the projection. The order of operations is the other paths', so the bytes are theirs.
//
// Cost: every weight row is read once per token (no reuse across tokens, unlike a tiled GEMM),
// which is what a fused per-token kernel trades for writing no scratch; on the suite's shapes it
// is far below a second.
#include <algorithm>

#include "launch_config.h"
#include "stacked_ctx_kv_fused.h"
#include "stacked_k_epilogue.cuh"

namespace kvc::kernels::detail {
namespace {

constexpr int kFusedThreads = 128;
constexpr int kXChunk = 256;                             // x columns staged per step
constexpr int kRowsPerThread = 2 * 512 / kFusedThreads;  // 2 * kMaxStackedHeadDim rows
static_assert(2 * kMaxStackedHeadDim == kRowsPerThread * kFusedThreads, "rows per thread");

struct FusedLayer {
  const std::uint16_t* kv_weight;  // [2 * kv_size, hidden]: K rows then V rows
  const std::uint16_t* kv_bias;    // [2 * kv_size] or null
  const std::uint16_t* k_norm_weight;
  std::uint16_t* k_pool;
  std::uint16_t* v_pool;
  std::int64_t k_slot_stride, v_slot_stride;
  std::int64_t slots;   // min of the two pools' slot counts
  std::int64_t column;  // of the layer's K rows in the projection
  int num_kv_heads;
  int head_dim;
  bool weight_fp16;
};

struct FusedArgs {
  const std::uint16_t* x;
  std::int64_t hidden;
  bool fp16;  // storage dtype D
  const std::int64_t* positions;
  const std::int64_t* cache_loc;
  const std::int64_t* commit_lens;
  std::int64_t commit_row_length;
  std::int64_t tokens;
  std::int64_t heads_per_token;
  const float* cos_sin;  // layer 0's: the eligible models share one table
  std::int64_t max_pos;
  float eps;                  // layer 0's: the eligible models share one eps
  std::uint16_t* projection;  // null: not stored
  std::int64_t ld;
  StackedEpiloguePolicies policies;  // the declared profile's epilogue (the contract's by default)
  bool slot_zero_reserved;           // the declared cache_loc policy: slot 0 is never written
  int num_layers;
  FusedLayer layer[kMaxStackedLayers];
};

__global__ void __launch_bounds__(kFusedThreads) stacked_fused_kernel(FusedArgs a) {
  __shared__ float xs[kXChunk];
  __shared__ float e[kMaxStackedHeadDim];
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / kWarpLanes;
  const int lane = tid % kWarpLanes;
  const std::int64_t tasks = a.tokens * a.heads_per_token;
  for (std::int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const std::int64_t t = task / a.heads_per_token;
    int head = static_cast<int>(task % a.heads_per_token);
    int l = 0;
    while (head >= a.layer[l].num_kv_heads) head -= a.layer[l++].num_kv_heads;
    const FusedLayer& L = a.layer[l];
    const std::int64_t slot = a.cache_loc[t];
    const std::int64_t position = a.positions[t];
    const bool writes = stacked_committed(a.commit_lens, a.commit_row_length, t) &&
                        slot >= (a.slot_zero_reserved ? 1 : 0) && slot < L.slots && position >= 0 &&
                        position < a.max_pos;
    if (!writes && a.projection == nullptr) continue;  // uniform over the block

    const int hd = L.head_dim;
    const std::int64_t kv_size = static_cast<std::int64_t>(L.num_kv_heads) * hd;
    const int rows = 2 * hd;
    // Row j < hd is K row head * hd + j; row j >= hd is V row kv_size + head * hd + (j - hd).
    const auto weight_row = [&](int j) -> std::int64_t {
      return j < hd ? static_cast<std::int64_t>(head) * hd + j
                    : kv_size + static_cast<std::int64_t>(head) * hd + (j - hd);
    };
    float acc[kRowsPerThread];
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) acc[i] = 0.0f;
    const std::uint16_t* x_row = a.x + t * a.hidden;
    for (std::int64_t c0 = 0; c0 < a.hidden; c0 += kXChunk) {
      const int depth = static_cast<int>(a.hidden - c0 < kXChunk ? a.hidden - c0 : kXChunk);
      for (int c = tid; c < depth; c += kFusedThreads) xs[c] = stacked_widen(x_row[c0 + c], a.fp16);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int j = tid + i * kFusedThreads;
        if (j >= rows) continue;
        const std::uint16_t* w = L.kv_weight + weight_row(j) * a.hidden + c0;
        float v = acc[i];
        for (int c = 0; c < depth; ++c) v = __fmaf_rn(xs[c], stacked_widen(w[c], L.weight_fp16), v);
        acc[i] = v;
      }
      __syncthreads();  // the next chunk overwrites xs
    }

    std::uint16_t* k_dst = L.k_pool + slot * L.k_slot_stride + static_cast<std::int64_t>(head) * hd;
    std::uint16_t* v_dst = L.v_pool + slot * L.v_slot_stride + static_cast<std::int64_t>(head) * hd;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const int j = tid + i * kFusedThreads;
      if (j >= rows) continue;
      const std::int64_t r = weight_row(j);
      float v = acc[i];
      if (L.kv_bias != nullptr) v = __fadd_rn(v, stacked_widen(L.kv_bias[r], L.weight_fp16));
      const std::uint16_t stored = stacked_narrow(v, a.fp16);
      if (a.projection != nullptr) a.projection[t * a.ld + L.column + r] = stored;
      if (!writes) continue;
      if (j < hd)
        e[j] = stacked_widen(stored, a.fp16);
      else
        v_dst[j - hd] = stored;
    }
    __syncthreads();
    if (writes && warp == 0)
      stacked_k_norm_rope_warp(e, hd, lane, L.k_norm_weight, L.weight_fp16, a.eps, a.cos_sin + position * hd, a.fp16,
                               k_dst, a.policies);
    __syncthreads();  // the next task overwrites e
  }
}

}  // namespace

cudaError_t launch_stacked_fused(const StackedCtxKvParams& p, cudaStream_t stream) {
  FusedArgs a{};
  a.x = p.x;
  a.hidden = p.hidden;
  a.fp16 = p.x_fp16;
  a.positions = p.positions;
  a.cache_loc = p.cache_loc;
  a.commit_lens = p.commit_lens;
  a.commit_row_length = p.commit_row_length;
  a.tokens = p.tokens;
  a.cos_sin = p.layers[0].cos_sin;
  a.max_pos = p.layers[0].max_pos;
  a.eps = p.layers[0].eps;
  a.projection = p.projection;
  a.policies = stacked_epilogue_policies(p.profile);
  a.slot_zero_reserved = p.profile.cache_loc == CacheLocPolicy::kSlotZeroReserved;
  a.num_layers = p.num_layers;
  std::int64_t column = 0;
  for (int i = 0; i < p.num_layers; ++i) {
    const StackedLayerDevice& d = p.layers[i];
    FusedLayer& f = a.layer[i];
    f.kv_weight = d.kv_weight;
    f.kv_bias = d.kv_bias;
    f.k_norm_weight = d.k_norm_weight;
    f.k_pool = d.k_pool;
    f.v_pool = d.v_pool;
    f.k_slot_stride = d.k_slot_stride;
    f.v_slot_stride = d.v_slot_stride;
    f.slots = std::min(d.k_slots, d.v_slots);
    f.column = column;
    f.num_kv_heads = static_cast<int>(d.num_kv_heads);
    f.head_dim = static_cast<int>(d.head_dim);
    f.weight_fp16 = d.weight_fp16;
    column += 2 * d.num_kv_heads * d.head_dim;
    a.heads_per_token += d.num_kv_heads;
  }
  a.ld = column;
  const std::int64_t tasks = a.tokens * a.heads_per_token;
  if (tasks == 0) return cudaSuccess;
  stacked_fused_kernel<<<grid_x(tasks), kFusedThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace kvc::kernels::detail
