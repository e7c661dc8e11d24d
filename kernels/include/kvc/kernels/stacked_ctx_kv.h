// stacked_ctx_kv.h: host API of the stacked context-KV projection (docs/contract.md §4.5).
//
// Three paths. The per-layer and stacked paths run two stages. The projection stage is a GEMM x [T, hidden] times the
// KV rows of the weights, the bias added once, rounded to the storage dtype D, into a projection matrix [T, sum of
// every layer's 2 * kv_size] (layer l's K then V columns at its column offset). The epilogue stage is one kernel: for
// every written token (cache_loc >= 0) and every kv head of the layers it covers, the K-norm on the stored K, NeoX
// RoPE, and the K and V pool writes.
//  - Stacked path: one GEMM over the stacked weight (all layers' KV rows), one epilogue launch for
//    every layer.
//  - Per-layer path: per layer, one GEMM over that layer's KV rows into its columns, then the
//    epilogue launch for that layer alone.
//  - Fused path (stacked_ctx_kv_fused.cu): one kernel; per (token, layer, kv head) a block
//    computes that head's K and V projection rows (the exact-order chain per element, from the
//    layer's own weight) and runs the epilogue on them, writing the pools; no projection scratch
//    (the projection output is written only when `projection` is given). It has one order: gemm
//    kCublas on this path runs the same exact-order chain (the result lies within any budget).
// Two GEMMs: kExactOrder, a CUDA-core GEMM whose every element is the contract's sequential fma
// chain (so both paths and the oracle agree bit for bit), and kCublas, cuBLASLt with 16-bit
// inputs, fp32 accumulation and the bias epilogue (x and weights in one dtype), which sums in its
// own order and is compared under the ulp budget of docs/contract.md §4.5.
// The epilogue runs under any stacked profile (docs/contract.md §6.2.1, StackedCtxKvParams::profile):
// every policy alternative is a warp-uniform branch on a kernel argument, so one build serves
// them all. The ABI entry point runs the contract's profile; the others are reached through the
// test hook (stacked_ctx_kv_test_hook.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"

namespace kvc::kernels {

enum class ProjectionGemm : std::uint8_t { kExactOrder = 0, kCublas = 1 };

// One layer's device tensors. Pools are [slots, num_kv_heads, head_dim] with a slot stride.
struct StackedLayerDevice {
  const std::uint16_t* kv_weight = nullptr;      // the layer's K rows then V rows: [2 * kv_size, hidden]
  const std::uint16_t* kv_bias = nullptr;        // [2 * kv_size] or null
  bool weight_fp16 = false;                      // the layer's dtype (weight, bias, norm weight): else bf16
  const std::uint16_t* k_norm_weight = nullptr;  // [head_dim]
  const float* cos_sin = nullptr;                // [max_pos, head_dim]
  std::int64_t max_pos = 0;
  std::uint16_t* k_pool = nullptr;
  std::uint16_t* v_pool = nullptr;
  std::int64_t k_slot_stride = 0;  // elements
  std::int64_t v_slot_stride = 0;
  std::int64_t k_slots = 0;
  std::int64_t v_slots = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  float eps = 0.0f;
};

struct StackedCtxKvParams {
  const std::uint16_t* x = nullptr;  // [tokens, hidden], contiguous
  bool x_fp16 = false;               // the storage dtype D: else bf16
  std::int64_t tokens = 0;
  std::int64_t hidden = 0;
  const std::int64_t* positions = nullptr;
  const std::int64_t* cache_loc = nullptr;  // [tokens], or [B, S] with commit_lens
  // Prefix-valid writes: [B] or null; token t writes only if t % S < commit_lens[t / S], with S
  // = commit_row_length (docs/contract.md §4.5).
  const std::int64_t* commit_lens = nullptr;
  std::int64_t commit_row_length = 1;
  int num_layers = 0;
  StackedLayerDevice layers[kMaxStackedLayers];
  StackedPath path = StackedPath::kPerLayer;
  ProjectionGemm gemm = ProjectionGemm::kExactOrder;
  // Stacked path: every layer's KV rows concatenated, [projection width, hidden], and the biases
  // [projection width] (null without bias), in the layers' dtype.
  const std::uint16_t* stacked_weight = nullptr;
  const std::uint16_t* stacked_bias = nullptr;
  // [tokens, projection width] in D: where the projection is stored; null: stream-ordered scratch.
  std::uint16_t* projection = nullptr;
  // The epilogue's policies. kUnspecified sums as the lane tree (any order is allowed); under
  // kSlotZeroReserved a token at slot 0 is skipped and one at a negative slot too (the ABI wrapper
  // rejects such a call with E159 before launching: the device only guards).
  StackedProfile profile;
};

struct LaunchStatus {
  enum class Kind : std::uint8_t { kOk = 0, kCudaError = 1, kUnsupported = 2 };
  Kind kind = Kind::kOk;
  std::string message;
  bool ok() const { return kind == Kind::kOk; }
};

// Enqueues the op on `stream` (nothing is synchronised). A device-side token whose cache_loc lies
// outside a pool or whose position lies outside a table is skipped. The cuBLAS GEMM needs x and
// the weights in one dtype (kUnsupported otherwise); its handle and workspace are made on the
// first call per device, which must therefore not be inside a stream capture.
LaunchStatus stacked_ctx_kv(const StackedCtxKvParams& p, cudaStream_t stream);

}  // namespace kvc::kernels
