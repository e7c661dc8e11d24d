// stacked_ctx_kv_builder.h: building StackedCtxKvCases from a few parameters.
//
// A StackedCtxKvShape says how many layers, tokens, heads and dims, the dtype, bias, eps, the
// positions and the cache_loc pattern; make_stacked_ctx_kv_case() draws every tensor from a seed
// (the same case on every machine). The Q rows of each fused QKV weight are filled with NaN: the
// op never reads them, so a kernel that slices the weight at the wrong row shows NaN (stored
// 0x7FFF) in its outputs. make_ineligible() breaks one eligibility condition of
// docs/contract.md §4.5 at one layer and keeps the case valid, for the fallback tests.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_ctx_kv_eligibility.h"
#include "testkit/backends/backing.h"

namespace kvc::testkit {

// How weights and x are drawn.
enum class StackedValues : std::uint8_t {
  kNormal = 0,   // round_D(N(0, 1)), the upstream parity test's torch.randn; about 10^7 values a second
  kUniform = 1,  // round_D(U(-1, 1)) from 16 random bits each; about 10^9 values a second (large shapes)
};

inline constexpr double kStackedRopeBase = 10000.0;

struct StackedCtxKvShape {
  int layers = 4;
  std::int64_t tokens = 5;
  std::int64_t hidden = 128;
  std::int64_t q_heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 64;
  DType dtype = DType::kF16;  // x, pools and every layer's weights
  bool bias = false;
  float eps = 1e-6f;
  std::int64_t max_pos = 4096;
  std::int64_t position_base = 0;  // positions[t] = position_base + t
  std::int64_t skip_every = 0;     // > 0: cache_loc[t] = -1 for every t % skip_every == skip_every - 1
  std::int64_t extra_slots = 3;    // pool slots = tokens + extra_slots; cache_loc a random injection
  std::int64_t slot_padding = 0;   // pool slot stride = kv_heads * head_dim + slot_padding elements
  StackedValues values = StackedValues::kNormal;
  std::uint64_t seed = 0;
  // Prefix-valid writes: empty, or B commit lengths with tokens a multiple of B; cache_loc is then
  // [B, tokens / B] (skip_every still applies to the flat index), and the uncommitted tokens keep
  // their distinct slots, so a kernel that ignores the lengths writes slots the oracle leaves alone.
  std::vector<std::int64_t> commit_lens;
};

StackedCtxKvCase make_stacked_ctx_kv_case(const StackedCtxKvShape& shape);

// Every layer's K and V pool filled with `canary`, each the size of its view.
StackedCtxKvOutputs make_stacked_outputs(const StackedCtxKvCase& c, std::uint8_t canary = kCanary);

// Breaks `reason` at `layer` (>= 1, or any layer for kQuantizedLayer) of a case built from
// `shape`: quantized flag, eps 1e-5, the bias added or removed, head_dim halved (doubled when 2),
// one more kv head, the other 16-bit dtype, a table with base 500000. Rebuilt layers are drawn
// from `seed`; the case stays valid.
void make_ineligible(StackedCtxKvCase& c, const StackedCtxKvShape& shape, StackedIneligibility reason, int layer,
                     std::uint64_t seed = 99);

// The case restricted to some tokens (in the given order): x rows, positions and cache_loc; the
// layers and pools are copied unchanged. With commit lengths the result has cache_loc [n, 1] and
// commit lengths of 1 (committed) or 0, so every policy reads it as the original. An oracle run of it writes exactly
// those tokens' slots.
StackedCtxKvCase with_tokens(const StackedCtxKvCase& c, const std::vector<std::int64_t>& tokens);

// The tokens a large case is checked at: the first two, the last two, the middle, and `random`
// more drawn from `seed`, distinct and ascending.
std::vector<std::int64_t> sample_tokens(std::int64_t tokens, int random, std::uint64_t seed);

}  // namespace kvc::testkit
