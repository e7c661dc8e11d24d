// stacked_ctx_kv_params.cpp: building and caching the stacked parameters (see stacked_ctx_kv_params.h).
#include "kvc/oracle/stacked_ctx_kv_params.h"

#include <cstring>

#include "kvc/oracle/storage16.h"

namespace kvc::oracle {
namespace {

// The layer's KV rows (K block, then V block) of its QKV weight, as 16-bit elements.
const std::uint8_t* kv_rows_begin(const StackedCtxKvLayer& l, std::int64_t hidden) {
  return l.qkv_weight.bytes.data() + l.qkv_weight.meta.offset_bytes + l.q_size * hidden * 2;
}
const std::uint8_t* kv_bias_begin(const StackedCtxKvLayer& l) {
  return l.qkv_bias.bytes.data() + l.qkv_bias.meta.offset_bytes + l.q_size * 2;
}

}  // namespace

StackedParams build_stacked_params(const StackedCtxKvCase& c) {
  const StackedCtxKvLayer& first = c.layers.front();
  StackedParams p;
  p.dtype = first.dtype();
  p.hidden = c.hidden();
  p.layers = c.num_layers();
  p.head_dim = first.head_dim;
  p.num_kv_heads = first.num_kv_heads;
  p.eps = first.eps;
  p.cos_sin = first.cos_sin;
  const std::int64_t rows = first.kv_rows();
  p.weight.resize(static_cast<std::size_t>(p.rows() * p.hidden));
  if (first.has_bias()) p.bias.resize(static_cast<std::size_t>(p.rows()));
  p.k_norm_weight.resize(static_cast<std::size_t>(p.layers * p.head_dim));
  for (std::int64_t l = 0; l < p.layers; ++l) {
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    std::memcpy(p.weight.data() + l * rows * p.hidden, kv_rows_begin(layer, p.hidden),
                static_cast<std::size_t>(rows * p.hidden * 2));
    if (p.has_bias()) std::memcpy(p.bias.data() + l * rows, kv_bias_begin(layer), static_cast<std::size_t>(rows * 2));
    for (std::int64_t d = 0; d < p.head_dim; ++d)
      p.k_norm_weight[static_cast<std::size_t>(l * p.head_dim + d)] =
          widen16(layer.k_norm_weight.load<std::uint16_t>(d), layer.dtype());
  }
  return p;
}

Status check_stacked_params_shape(const StackedParams& p, const StackedCtxKvCase& c) {
  const StackedCtxKvLayer& first = c.layers.front();
  const std::string want = "[" + std::to_string(c.projection_width()) + ", " + std::to_string(c.hidden()) + "]";
  if (p.dtype != first.dtype() || p.hidden != c.hidden() || p.layers != c.num_layers() ||
      p.head_dim != first.head_dim || p.num_kv_heads != first.num_kv_heads || p.rows() != c.projection_width() ||
      static_cast<std::int64_t>(p.weight.size()) != p.rows() * p.hidden)
    return Error(ErrorCode::kStackedParamsMismatch, "the stacked weight must be " + want + " of the layers' dtype");
  if (p.has_bias() != first.has_bias() || (p.has_bias() && static_cast<std::int64_t>(p.bias.size()) != p.rows()))
    return Error(ErrorCode::kStackedParamsMismatch,
                 first.has_bias()
                     ? "the layers have biases: the stacked bias must be [" + std::to_string(c.projection_width()) + "]"
                     : "the layers have no bias, the stacked parameters do");
  if (static_cast<std::int64_t>(p.k_norm_weight.size()) != p.layers * p.head_dim ||
      p.cos_sin.meta.sizes != first.cos_sin.meta.sizes)
    return Error(ErrorCode::kStackedParamsMismatch, "stacked K-norm weights or table of another shape");
  return Status::Ok();
}

bool stacked_params_match(const StackedParams& p, const StackedCtxKvCase& c) {
  if (c.layers.empty()) return false;
  const StackedCtxKvLayer& first = c.layers.front();
  if (p.layers != c.num_layers() || p.hidden != c.hidden() || p.dtype != first.dtype() ||
      p.head_dim != first.head_dim || p.num_kv_heads != first.num_kv_heads || p.has_bias() != first.has_bias() ||
      std::memcmp(&p.eps, &first.eps, sizeof p.eps) != 0)
    return false;
  if (p.cos_sin.meta.sizes != first.cos_sin.meta.sizes) return false;
  const std::int64_t table_bytes = first.cos_sin.meta.numel() * 4;
  if (table_bytes > 0 && std::memcmp(p.cos_sin.bytes.data() + p.cos_sin.meta.offset_bytes,
                                     first.cos_sin.bytes.data() + first.cos_sin.meta.offset_bytes,
                                     static_cast<std::size_t>(table_bytes)) != 0)
    return false;
  const std::int64_t rows = first.kv_rows();
  for (std::int64_t l = 0; l < p.layers; ++l) {
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    if (std::memcmp(p.weight.data() + l * rows * p.hidden, kv_rows_begin(layer, p.hidden),
                    static_cast<std::size_t>(rows * p.hidden * 2)) != 0)
      return false;
    if (p.has_bias() &&
        std::memcmp(p.bias.data() + l * rows, kv_bias_begin(layer), static_cast<std::size_t>(rows * 2)) != 0)
      return false;
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const float w = widen16(layer.k_norm_weight.load<std::uint16_t>(d), layer.dtype());
      if (std::memcmp(&w, &p.k_norm_weight[static_cast<std::size_t>(l * p.head_dim + d)], sizeof w) != 0) return false;
    }
  }
  return true;
}

const StackedParams& StackedParamCache::get(const StackedCtxKvCase& c) {
  // Parameters of another shape are never used, whatever the check: a different model.
  const bool current = valid_ && check_stacked_params_shape(params_, c).ok() &&
                       (check_ == ParamCacheCheck::kTrustCache || stacked_params_match(params_, c));
  if (!current) {
    params_ = build_stacked_params(c);
    valid_ = true;
    ++builds_;
  }
  return params_;
}

}  // namespace kvc::oracle
