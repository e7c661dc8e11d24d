// stacked_ctx_kv_fused.cpp: the fused path (see stacked_ctx_kv_fused.h).
#include "kvc/oracle/stacked_ctx_kv_fused.h"

#include <cstring>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/storage16.h"
#include "kvc/stacked_ctx_kv_validate.h"

namespace kvc::oracle {
namespace {

const std::uint16_t* elements16(const HostTensor& t) {
  return reinterpret_cast<const std::uint16_t*>(t.bytes.data() + t.meta.offset_bytes);
}

void store16(std::vector<std::uint8_t>& pool, const TensorMeta& m, std::int64_t element, std::uint16_t v) {
  std::memcpy(pool.data() + m.offset_bytes + element * 2, &v, sizeof v);
}

}  // namespace

void run_stacked_fused(const StackedCtxKvCase& c, const StackedProfile& profile, std::vector<std::uint16_t>& projection,
                       StackedCtxKvOutputs& out) {
  const StackedCtxKvLayer& first = c.layers.front();
  const float eps = first.eps;
  const float* cos_sin = reinterpret_cast<const float*>(first.cos_sin.bytes.data() + first.cos_sin.meta.offset_bytes);
  const std::int64_t hidden = c.hidden();
  const std::int64_t width = c.projection_width();
  const DType storage = c.storage_dtype();
  const std::uint16_t* x = elements16(c.x);
  std::vector<std::uint16_t> k(static_cast<std::size_t>(kMaxStackedHeadDim));
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
    const std::uint16_t* x_row = x + t * hidden;
    const std::int64_t slot = c.committed(t) ? c.cache_loc.load<std::int64_t>(t) : -1;
    const bool writes = c.committed(t) && writes_slot(slot, profile.cache_loc);
    const std::int64_t position = c.positions.load<std::int64_t>(t);
    for (int i = 0; i < c.num_layers(); ++i) {
      const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
      const std::int64_t hd = l.head_dim;
      const std::int64_t kv_size = l.kv_size();
      const std::uint16_t* w = elements16(l.qkv_weight) + l.q_size * hidden;  // the K rows, then the V rows
      const std::uint16_t* b = l.has_bias() ? elements16(l.qkv_bias) + l.q_size : nullptr;
      std::vector<float> norm_weight(static_cast<std::size_t>(hd));
      for (std::int64_t d = 0; d < hd; ++d)
        norm_weight[static_cast<std::size_t>(d)] = widen16(l.k_norm_weight.load<std::uint16_t>(d), l.dtype());
      std::uint16_t* row = projection.data() + t * width + c.projection_column(i);
      for (std::int64_t h = 0; h < l.num_kv_heads; ++h) {
        // This head's K and V rows, projected here and nowhere else.
        for (std::int64_t d = 0; d < hd; ++d) {
          for (const std::int64_t r : {h * hd + d, kv_size + h * hd + d})
            row[r] = project_element(x_row, storage, w + r * hidden, l.dtype(), hidden, b ? b + r : nullptr, storage);
        }
        if (!writes) continue;
        std::memcpy(k.data(), row + h * hd, static_cast<std::size_t>(hd) * 2);
        k_norm_rope_head(k.data(), hd, norm_weight.data(), eps, cos_sin + position * hd, storage, profile);
        const std::int64_t k_base = slot * l.k_pool.stride(0) + h * l.k_pool.stride(1);
        const std::int64_t v_base = slot * l.v_pool.stride(0) + h * l.v_pool.stride(1);
        for (std::int64_t d = 0; d < hd; ++d) {
          store16(out.k_pools[static_cast<std::size_t>(i)], l.k_pool, k_base + d, k[static_cast<std::size_t>(d)]);
          store16(out.v_pools[static_cast<std::size_t>(i)], l.v_pool, v_base + d, row[kv_size + h * hd + d]);
        }
      }
    }
  }
}

}  // namespace kvc::oracle
