// stacked_ctx_kv_builder.cpp: building stacked context-KV cases (see stacked_ctx_kv_builder.h).
#include "testkit/cases/stacked_ctx_kv_builder.h"

#include <algorithm>
#include <set>

#include "kvc/oracle/cos_sin_cache.h"
#include "kvc/oracle/storage16.h"
#include "testkit/cases/case_builder.h"

namespace kvc::testkit {
namespace {

// What one layer is made of.
struct LayerSpec {
  std::int64_t q_size;
  std::int64_t kv_heads;
  std::int64_t head_dim;
  DType dtype;
  bool bias;
  float eps;
  double rope_base;
};

std::uint16_t nan16(DType d) { return d == DType::kF16 ? 0x7E01 : 0x7FC1; }

void fill(std::vector<std::uint16_t>& v, std::size_t begin, std::size_t end, StackedValues values, DType d, Rng& rng) {
  if (values == StackedValues::kNormal) {
    for (std::size_t i = begin; i < end; ++i) v[i] = oracle::narrow16(rng.normal(), d);
    return;
  }
  for (std::size_t i = begin; i < end; i += 4) {
    std::uint64_t bits = rng.bits();
    for (std::size_t k = i; k < std::min(end, i + 4); ++k, bits >>= 16) {
      const float u = (static_cast<float>(bits & 0xFFFFu) + 0.5f) * 0x1p-15f - 1.0f;  // (-1, 1)
      v[k] = oracle::narrow16(u, d);
    }
  }
}

HostTensor tensor16(DType d, const std::vector<std::uint16_t>& v, std::vector<std::int64_t> sizes) {
  return make_tensor_from(d, v, std::move(sizes));
}

TensorMeta pool_meta(std::int64_t slots, std::int64_t kv_heads, std::int64_t head_dim, std::int64_t padding, DType d) {
  TensorMeta m;
  m.dtype = d;
  m.sizes = {slots, kv_heads, head_dim};
  m.strides = {kv_heads * head_dim + padding, head_dim, 1};
  return m;
}

StackedCtxKvLayer make_layer(const StackedCtxKvShape& s, const LayerSpec& spec, Rng& rng) {
  StackedCtxKvLayer l;
  l.q_size = spec.q_size;
  l.num_kv_heads = spec.kv_heads;
  l.head_dim = spec.head_dim;
  l.eps = spec.eps;
  const std::int64_t rows = spec.q_size + 2 * spec.kv_heads * spec.head_dim;
  std::vector<std::uint16_t> w(static_cast<std::size_t>(rows * s.hidden), nan16(spec.dtype));  // Q rows: NaN
  fill(w, static_cast<std::size_t>(spec.q_size * s.hidden), w.size(), s.values, spec.dtype, rng);
  l.qkv_weight = tensor16(spec.dtype, w, {rows, s.hidden});
  if (spec.bias) {
    std::vector<std::uint16_t> b(static_cast<std::size_t>(rows), nan16(spec.dtype));
    fill(b, static_cast<std::size_t>(spec.q_size), b.size(), StackedValues::kNormal, spec.dtype, rng);
    l.qkv_bias = tensor16(spec.dtype, b, {rows});
  }
  std::vector<std::uint16_t> g(static_cast<std::size_t>(spec.head_dim));
  fill(g, 0, g.size(), StackedValues::kNormal, spec.dtype, rng);
  l.k_norm_weight = tensor16(spec.dtype, g, {spec.head_dim});
  l.cos_sin = make_tensor_from(DType::kF32,
                               oracle::make_cos_sin_cache(s.max_pos, static_cast<int>(spec.head_dim), spec.rope_base),
                               {s.max_pos, spec.head_dim});
  const std::int64_t slots = s.tokens + s.extra_slots;
  l.k_pool = pool_meta(slots, spec.kv_heads, spec.head_dim, s.slot_padding, s.dtype);
  l.v_pool = pool_meta(slots, spec.kv_heads, spec.head_dim, s.slot_padding, s.dtype);
  return l;
}

LayerSpec base_spec(const StackedCtxKvShape& s) {
  return LayerSpec{s.q_heads * s.head_dim, s.kv_heads, s.head_dim, s.dtype, s.bias, s.eps, kStackedRopeBase};
}

}  // namespace

StackedCtxKvCase make_stacked_ctx_kv_case(const StackedCtxKvShape& s) {
  Rng rng(s.seed * 0x9E3779B97F4A7C15ull + 0x57AC4Eull);
  StackedCtxKvCase c;
  // Per layer: weight, bias, K-norm weight (the upstream test's draw order), then x.
  for (int l = 0; l < s.layers; ++l) c.layers.push_back(make_layer(s, base_spec(s), rng));
  std::vector<std::uint16_t> x(static_cast<std::size_t>(s.tokens * s.hidden));
  fill(x, 0, x.size(), s.values, s.dtype, rng);
  c.x = tensor16(s.dtype, x, {s.tokens, s.hidden});
  std::vector<std::int64_t> positions(static_cast<std::size_t>(s.tokens));
  for (std::int64_t t = 0; t < s.tokens; ++t) positions[static_cast<std::size_t>(t)] = s.position_base + t;
  c.positions = make_tensor_from(DType::kI64, positions, {s.tokens});
  std::vector<std::int64_t> loc = rng.distinct(s.tokens + s.extra_slots, s.tokens);
  if (s.skip_every > 0)
    for (std::int64_t t = s.skip_every - 1; t < s.tokens; t += s.skip_every) loc[static_cast<std::size_t>(t)] = -1;
  if (s.commit_lens.empty()) {
    c.cache_loc = make_tensor_from(DType::kI64, loc, {s.tokens});
  } else {
    const std::int64_t rows = static_cast<std::int64_t>(s.commit_lens.size());
    c.cache_loc = make_tensor_from(DType::kI64, loc, {rows, s.tokens / rows});
    c.commit_lens = make_tensor_from(DType::kI64, s.commit_lens, {rows});
  }
  return c;
}

StackedCtxKvOutputs make_stacked_outputs(const StackedCtxKvCase& c, std::uint8_t canary) {
  StackedCtxKvOutputs out;
  for (const StackedCtxKvLayer& l : c.layers) {
    out.k_pools.emplace_back(static_cast<std::size_t>(l.k_pool.span_bytes()), canary);
    out.v_pools.emplace_back(static_cast<std::size_t>(l.v_pool.span_bytes()), canary);
  }
  return out;
}

void make_ineligible(StackedCtxKvCase& c, const StackedCtxKvShape& shape, StackedIneligibility reason, int layer,
                     std::uint64_t seed) {
  StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(layer)];
  Rng rng(seed);
  LayerSpec spec = base_spec(shape);
  switch (reason) {
    case StackedIneligibility::kNone: return;
    case StackedIneligibility::kQuantizedLayer: l.quantized = true; return;
    case StackedIneligibility::kEpsDiffers: l.eps = shape.eps == 1e-5f ? 1e-6f : 1e-5f; return;
    case StackedIneligibility::kBiasOnSomeLayers: spec.bias = !l.has_bias(); break;
    case StackedIneligibility::kHeadDimDiffers:
      spec.head_dim = shape.head_dim == 2 ? 4 : shape.head_dim / 2 + (shape.head_dim / 2) % 2;
      spec.q_size = shape.q_heads * spec.head_dim;
      break;
    case StackedIneligibility::kKvHeadsDiffers: spec.kv_heads = shape.kv_heads + 1; break;
    case StackedIneligibility::kDtypeDiffers:
      spec.dtype = shape.dtype == DType::kF16 ? DType::kBF16 : DType::kF16;
      break;
    case StackedIneligibility::kRotaryTableDiffers: spec.rope_base = 500000.0; break;
  }
  l = make_layer(shape, spec, rng);
}

StackedCtxKvCase with_tokens(const StackedCtxKvCase& c, const std::vector<std::int64_t>& tokens) {
  StackedCtxKvCase s;
  s.layers = c.layers;
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  const std::int64_t hidden = c.hidden();
  std::vector<std::uint16_t> x(static_cast<std::size_t>(n * hidden));
  std::vector<std::int64_t> positions(tokens.size()), loc(tokens.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = tokens[static_cast<std::size_t>(i)];
    for (std::int64_t k = 0; k < hidden; ++k)
      x[static_cast<std::size_t>(i * hidden + k)] = c.x.load<std::uint16_t>(t * hidden + k);
    positions[static_cast<std::size_t>(i)] = c.positions.load<std::int64_t>(t);
    loc[static_cast<std::size_t>(i)] = c.cache_loc.load<std::int64_t>(t);
  }
  s.x = tensor16(c.storage_dtype(), x, {n, hidden});
  s.positions = make_tensor_from(DType::kI64, positions, {n});
  if (!c.has_commit_lens()) {
    s.cache_loc = make_tensor_from(DType::kI64, loc, {n});
    return s;
  }
  std::vector<std::int64_t> committed(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) committed[i] = c.committed(tokens[i]) ? 1 : 0;
  s.cache_loc = make_tensor_from(DType::kI64, loc, {n, 1});
  s.commit_lens = make_tensor_from(DType::kI64, committed, {n});
  return s;
}

std::vector<std::int64_t> sample_tokens(std::int64_t tokens, int random, std::uint64_t seed) {
  std::set<std::int64_t> picked;
  for (std::int64_t t : {std::int64_t{0}, std::int64_t{1}, tokens / 2, tokens - 2, tokens - 1})
    if (t >= 0 && t < tokens) picked.insert(t);
  Rng rng(seed);
  for (int i = 0; i < random && tokens > 0; ++i) picked.insert(rng.uniform(0, tokens - 1));
  return {picked.begin(), picked.end()};
}

}  // namespace kvc::testkit
