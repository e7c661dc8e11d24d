// stacked_ctx_kv.cpp: the stacked context-KV projection, per-layer and stacked (see stacked_ctx_kv.h).
#include "kvc/oracle/stacked_ctx_kv.h"

#include <cmath>
#include <cstring>

#include "kvc/oracle/stacked_ctx_kv_fused.h"
#include "kvc/oracle/stacked_ctx_kv_k_norm.h"
#include "kvc/oracle/storage16.h"

namespace kvc::oracle {
namespace {

const std::uint16_t* elements16(const HostTensor& t) {
  return reinterpret_cast<const std::uint16_t*>(t.bytes.data() + t.meta.offset_bytes);
}
const float* elements32(const HostTensor& t) {
  return reinterpret_cast<const float*>(t.bytes.data() + t.meta.offset_bytes);
}

void store16(std::vector<std::uint8_t>& pool, const TensorMeta& m, std::int64_t element, std::uint16_t v) {
  std::memcpy(pool.data() + m.offset_bytes + element * 2, &v, sizeof v);
}

// Projection of every token onto `rows` weight rows (row-major, `hidden` each) with an optional
// bias, into columns [column, column + rows) of the [T, width] projection.
void project(const StackedCtxKvCase& c, const std::uint16_t* weight, const std::uint16_t* bias, DType w_dtype,
             std::int64_t rows, std::int64_t column, std::vector<std::uint16_t>& projection) {
  const std::int64_t hidden = c.hidden();
  const std::int64_t width = c.projection_width();
  const std::uint16_t* x = elements16(c.x);
  for (std::int64_t t = 0; t < c.num_tokens(); ++t)
    for (std::int64_t r = 0; r < rows; ++r)
      projection[static_cast<std::size_t>(t * width + column + r)] =
          project_element(x + t * hidden, c.storage_dtype(), weight + r * hidden, w_dtype, hidden,
                          bias ? bias + r : nullptr, c.storage_dtype());
}

// What the epilogue of one layer reads besides the projection.
struct EpilogueLayer {
  std::int64_t column;  // of the layer's K rows in the projection
  std::int64_t num_kv_heads;
  std::int64_t head_dim;
  const float* norm_weight;  // [head_dim], widened
  float eps;
  const float* cos_sin;  // [max_pos, head_dim]
};

// K-norm + RoPE + pool writes of one layer for every written token.
void epilogue(const StackedCtxKvCase& c, int layer, const EpilogueLayer& e,
              const std::vector<std::uint16_t>& projection, const StackedProfile& profile, StackedCtxKvOutputs& out) {
  const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(layer)];
  const std::int64_t width = c.projection_width();
  const std::int64_t kv_size = e.num_kv_heads * e.head_dim;
  std::vector<std::uint16_t> head(static_cast<std::size_t>(e.head_dim));
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
    if (!c.committed(t)) continue;  // outside its row's committed prefix: its cache_loc is not read
    const std::int64_t slot = c.cache_loc.load<std::int64_t>(t);
    if (!writes_slot(slot, profile.cache_loc)) continue;
    const std::int64_t position = c.positions.load<std::int64_t>(t);
    const float* cs_row = e.cos_sin + position * e.head_dim;
    const std::uint16_t* row = projection.data() + t * width + e.column;
    for (std::int64_t h = 0; h < e.num_kv_heads; ++h) {
      std::memcpy(head.data(), row + h * e.head_dim, head.size() * 2);
      k_norm_rope_head(head.data(), e.head_dim, e.norm_weight, e.eps, cs_row, c.storage_dtype(), profile);
      const std::int64_t k_base = slot * l.k_pool.stride(0) + h * l.k_pool.stride(1);
      const std::int64_t v_base = slot * l.v_pool.stride(0) + h * l.v_pool.stride(1);
      for (std::int64_t d = 0; d < e.head_dim; ++d) {
        store16(out.k_pools[static_cast<std::size_t>(layer)], l.k_pool, k_base + d, head[static_cast<std::size_t>(d)]);
        store16(out.v_pools[static_cast<std::size_t>(layer)], l.v_pool, v_base + d, row[kv_size + h * e.head_dim + d]);
      }
    }
  }
}

std::vector<float> widened_norm_weight(const StackedCtxKvLayer& l) {
  std::vector<float> w(static_cast<std::size_t>(l.head_dim));
  for (std::int64_t d = 0; d < l.head_dim; ++d)
    w[static_cast<std::size_t>(d)] = widen16(l.k_norm_weight.load<std::uint16_t>(d), l.dtype());
  return w;
}

// The per-layer path: each layer's projection from its own KV rows, then its epilogue.
void run_per_layer(const StackedCtxKvCase& c, const StackedProfile& profile, std::vector<std::uint16_t>& projection,
                   StackedCtxKvOutputs& out) {
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    const std::uint16_t* kv_weight = elements16(l.qkv_weight) + l.q_size * c.hidden();
    const std::uint16_t* kv_bias = l.has_bias() ? elements16(l.qkv_bias) + l.q_size : nullptr;
    project(c, kv_weight, kv_bias, l.dtype(), l.kv_rows(), c.projection_column(i), projection);
    const std::vector<float> w = widened_norm_weight(l);
    epilogue(c, i,
             EpilogueLayer{c.projection_column(i), l.num_kv_heads, l.head_dim, w.data(), l.eps, elements32(l.cos_sin)},
             projection, profile, out);
  }
}

// The stacked path: one projection over the stacked weight, then every layer's epilogue from the
// stacked norm weights, the common eps and layer 0's table.
void run_stacked(const StackedCtxKvCase& c, const StackedParams& p, const StackedProfile& profile,
                 std::vector<std::uint16_t>& projection, StackedCtxKvOutputs& out) {
  project(c, p.weight.data(), p.has_bias() ? p.bias.data() : nullptr, p.dtype, p.rows(), 0, projection);
  const std::int64_t rows = 2 * p.kv_size();
  for (int i = 0; i < p.layers; ++i)
    epilogue(c, i,
             EpilogueLayer{i * rows, p.num_kv_heads, p.head_dim, p.k_norm_weight.data() + i * p.head_dim, p.eps,
                           elements32(p.cos_sin)},
             projection, profile, out);
}

}  // namespace

std::uint16_t project_element(const std::uint16_t* x_row, DType x_dtype, const std::uint16_t* w_row, DType w_dtype,
                              std::int64_t hidden, const std::uint16_t* bias, DType storage) {
  float acc = 0.0f;
  for (std::int64_t k = 0; k < hidden; ++k) acc = std::fma(widen16(x_row[k], x_dtype), widen16(w_row[k], w_dtype), acc);
  if (bias != nullptr) acc = acc + widen16(*bias, w_dtype);  // fl(acc + b): one rounding (-ffp-contract=off)
  return narrow16(acc, storage);
}

void k_norm_rope_head(std::uint16_t* k, std::int64_t head_dim, const float* weight, float eps, const float* cos_sin_row,
                      DType storage, const StackedProfile& profile) {
  std::vector<float> e(static_cast<std::size_t>(head_dim));
  for (std::int64_t d = 0; d < head_dim; ++d) e[static_cast<std::size_t>(d)] = widen16(k[d], storage);
  const float r = k_norm_reciprocal(k_norm_sum_of_squares(e.data(), head_dim, profile.reduction), head_dim, eps);
  k_norm_rope_head_with_r(k, head_dim, weight, r, cos_sin_row, storage, profile.rope);
}

Status stacked_ctx_kv_epilogue(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& projection,
                               StackedCtxKvOutputs& out, const StackedProfile& profile) {
  if (Status s = validate_stacked_ctx_kv_outputs(c, out); !s.ok()) return s;
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    const std::vector<float> w = widened_norm_weight(l);
    epilogue(c, i,
             EpilogueLayer{c.projection_column(i), l.num_kv_heads, l.head_dim, w.data(), l.eps, elements32(l.cos_sin)},
             projection, profile, out);
  }
  return Status::Ok();
}

Status stacked_ctx_kv(const StackedCtxKvCase& c, StackedCtxKvOutputs& out, const StackedCtxKvOptions& options,
                      StackedCtxKvRun* run) {
  if (Status s = validate_stacked_ctx_kv(c, options.level, ValueAccess::kMetadataAndValues, options.profile.cache_loc);
      !s.ok())
    return s;
  if (Status s = validate_stacked_ctx_kv_outputs(c, out); !s.ok()) return s;
  const StackedEligibility eligibility = stacked_ctx_kv_eligibility(c);
  const FusedEligibility fused = stacked_fused_eligibility(c);
  StackedPath path = StackedPath::kPerLayer;
  if (Status s = resolve_stacked_path(options.path, eligibility, fused, &path); !s.ok()) return s;

  std::vector<std::uint16_t> projection(static_cast<std::size_t>(c.num_tokens() * c.projection_width()));
  if (path == StackedPath::kStacked && options.params != nullptr) {
    if (Status s = check_stacked_params_shape(*options.params, c); !s.ok()) return s;
  }
  if (path == StackedPath::kFused) {
    run_stacked_fused(c, options.profile, projection, out);
  } else if (path == StackedPath::kStacked) {
    if (options.params != nullptr) {
      run_stacked(c, *options.params, options.profile, projection, out);
    } else if (options.cache != nullptr) {
      run_stacked(c, options.cache->get(c), options.profile, projection, out);
    } else {
      run_stacked(c, build_stacked_params(c), options.profile, projection, out);
    }
  } else {
    run_per_layer(c, options.profile, projection, out);
  }
  if (run != nullptr) {
    run->path = path;
    run->eligibility = eligibility;
    run->fused_eligibility = fused;
    run->projection = std::move(projection);
  }
  return Status::Ok();
}

}  // namespace kvc::oracle
