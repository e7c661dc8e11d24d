// stacked_ctx_kv_case.h: StackedCtxKvCase, the one description of a stacked context-KV problem.
//
// The DSpark draft model's context-KV write (docs/contract.md §4.5): the context hidden states x
// are projected to K and V for every draft layer, K is normed and rotated (NeoX), and K and V land
// in each layer's paged pool at cache_loc. The problem is plain data like InsertCase: host tensors
// with the metadata the validation rules look at, one entry per layer, and the pools' views (their
// bytes live in the caller's StackedCtxKvOutputs). The oracle, the kernels' ABI wrapper, the case
// files, the registry and the fuzz properties all speak this type.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/insert_case.h"

namespace kvc {

// Layers one call handles. The kernels pass every layer's pointers as launch parameters, so the
// bound is part of the op's validation (E143).
inline constexpr int kMaxStackedLayers = 32;
// Largest head_dim: a warp holds one head in shared memory (E149).
inline constexpr std::int64_t kMaxStackedHeadDim = 512;

// One draft layer: its fused QKV projection, K-norm and rotary table, and its two pools.
struct StackedCtxKvLayer {
  // [q_size + 2 * kv_size, hidden], bf16 or fp16 (the layer's dtype): Q rows, then K, then V;
  // within K and within V the kv heads of head_dim rows each are contiguous.
  HostTensor qkv_weight;
  HostTensor qkv_bias;       // [q_size + 2 * kv_size] in the layer's dtype; absent = no bias
  HostTensor k_norm_weight;  // [head_dim] in the layer's dtype
  HostTensor cos_sin;        // [max_pos, head_dim] fp32: cosines, then sines (docs/contract.md §2.7)
  float eps = 1e-6f;         // K-norm epsilon
  std::int64_t q_size = 0;   // Q rows in front of the KV rows (num_q_heads * head_dim)
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  // The layer's projection is a quantized linear: its weight cannot be sliced into the stacked
  // weight, so the stacked path is ineligible (docs/contract.md §4.5). qkv_weight then holds the
  // values the layer's own (per-layer) projection multiplies by.
  bool quantized = false;
  // [slots, num_kv_heads, head_dim] in x's dtype, stride(2) == 1 and stride(1) == head_dim.
  TensorMeta k_pool;
  TensorMeta v_pool;

  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
  // Rows of the K and V blocks: the rows the op reads from qkv_weight.
  std::int64_t kv_rows() const { return 2 * kv_size(); }
  DType dtype() const { return qkv_weight.meta.dtype; }
  bool has_bias() const { return qkv_bias.present; }
};

struct StackedCtxKvCase {
  HostTensor x;          // [T, hidden] bf16 or fp16: the storage dtype D of every output
  HostTensor positions;  // [T] int64
  // [T] int64; a negative entry skips the token (nothing written). With commit_lens: [B, S],
  // T = B * S, row-major (token t is (t / S, t % S)).
  HostTensor cache_loc;
  // Prefix-valid writes (docs/contract.md §4.5, version 3): absent, or [B] int64 with cache_loc
  // [B, S]; token (b, s) writes iff s < commit_lens[b], then the cache_loc policy applies. The
  // cache_loc entries of the other tokens are never read.
  HostTensor commit_lens;
  std::vector<StackedCtxKvLayer> layers;

  std::int64_t num_tokens() const { return x.meta.rank() >= 1 ? x.meta.size(0) : 0; }
  bool has_commit_lens() const { return commit_lens.present; }
  // S, the tokens per commit row: cache_loc's last size with commit lengths (validated), else 1.
  std::int64_t commit_row_length() const {
    return commit_lens.present && cache_loc.meta.rank() == 2 ? cache_loc.meta.size(1) : 1;
  }
  // Whether token t lies in its row's committed prefix (always, without commit lengths). Values
  // are read: the case must be validated (commit_lens [B] with cache_loc [B, S]).
  bool committed(std::int64_t t) const {
    if (!commit_lens.present) return true;
    const std::int64_t s = commit_row_length();
    return t % s < commit_lens.load<std::int64_t>(t / s);
  }
  std::int64_t hidden() const { return x.meta.rank() == 2 ? x.meta.size(1) : 0; }
  DType storage_dtype() const { return x.meta.dtype; }
  int num_layers() const { return static_cast<int>(layers.size()); }
  // Columns of the projection [T, sum of every layer's 2 * kv_size]: layer l's K rows, then its V
  // rows, at column offset sum over j < l of 2 * kv_size(j). Both paths produce this matrix.
  std::int64_t projection_width() const {
    std::int64_t w = 0;
    for (const StackedCtxKvLayer& l : layers) w += l.kv_rows();
    return w;
  }
  std::int64_t projection_column(int layer) const {
    std::int64_t w = 0;
    for (int l = 0; l < layer; ++l) w += layers[static_cast<std::size_t>(l)].kv_rows();
    return w;
  }
};

// What the op writes: every layer's K and V pool bytes (prefilled by the caller, typically with
// a canary), each covering its pool view (offset_bytes + span).
struct StackedCtxKvOutputs {
  std::vector<std::vector<std::uint8_t>> k_pools;
  std::vector<std::vector<std::uint8_t>> v_pools;
};

// The three ways of computing the op (docs/contract.md §4.5). All follow the contract's order of
// operations, so under one profile they give the same bytes; they differ in how the projection is
// organised.
enum class StackedPath : std::uint8_t {
  kPerLayer = 0,  // one projection per layer, then that layer's epilogue
  kStacked = 1,   // one projection over every layer's KV rows, then one epilogue for all layers
  kFused = 2,     // per (token, layer, kv head): its K and V rows projected and the epilogue run at once
};

// What a caller asks for: kAuto takes the fused path when the model is eligible for it, else the
// stacked path when eligible, else per layer (docs/contract.md §4.5); or one path. Forcing
// kStacked or kFused on a model ineligible for it is rejected (E157).
enum class StackedPathRequest : std::uint8_t { kAuto = 0, kPerLayer = 1, kStacked = 2, kFused = 3 };

inline const char* path_name(StackedPath p) {
  switch (p) {
    case StackedPath::kPerLayer: return "per-layer";
    case StackedPath::kStacked: return "stacked";
    case StackedPath::kFused: return "fused";
  }
  return "unknown";
}

}  // namespace kvc
