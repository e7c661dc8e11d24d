// stacked_ctx_kv_validate.cpp: the stacked context-KV op's rules (see stacked_ctx_kv_validate.h).
#include "kvc/stacked_ctx_kv_validate.h"

#include <algorithm>
#include <string>

#include "rule_order.h"
#include "tensor_rules.h"

namespace kvc {
namespace {

using detail::shape_text;

std::string layer_text(int i) { return "layer " + std::to_string(i); }

bool is_storage16(DType t) { return t == DType::kBF16 || t == DType::kF16; }

// Why metadata is not TensorMeta::well_formed(), or "".
std::string meta_defect(const TensorMeta& m) {
  if (m.sizes.size() != m.strides.size())
    return std::to_string(m.sizes.size()) + " sizes but " + std::to_string(m.strides.size()) + " strides";
  if (dtype_size(m.dtype) == 0) return "unknown dtype code " + std::to_string(static_cast<int>(m.dtype));
  if (!m.well_formed()) return shape_text(m) + ": a negative size, stride or offset, or an extent past int64";
  // torch never places an element off its natural alignment; the oracle addresses elements directly.
  if (m.offset_bytes % dtype_size(m.dtype) != 0)
    return "offset_bytes " + std::to_string(m.offset_bytes) + " is not a multiple of the element size";
  return {};
}

// Contiguous 1-D int64 with `n` entries.
bool is_index_vector(const HostTensor& t, std::int64_t n) {
  return t.present && t.meta.dtype == DType::kI64 && t.meta.rank() == 1 && t.meta.size(0) == n && t.meta.contiguous();
}

template <typename Visit>
void for_each_tensor(const StackedCtxKvCase& c, Visit&& visit) {
  visit(std::string("x"), c.x);
  visit(std::string("positions"), c.positions);
  visit(std::string("cache_loc"), c.cache_loc);
  visit(std::string("commit_lens"), c.commit_lens);
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    const std::string p = layer_text(i) + " ";
    visit(p + "qkv_weight", l.qkv_weight);
    visit(p + "qkv_bias", l.qkv_bias);
    visit(p + "k_norm_weight", l.k_norm_weight);
    visit(p + "cos_sin", l.cos_sin);
  }
}

Status check_metadata_well_formed(const StackedCtxKvCase& c) {
  Status status;
  for_each_tensor(c, [&](const std::string& name, const HostTensor& t) {
    if (!status.ok() || !t.present) return;
    if (const std::string why = meta_defect(t.meta); !why.empty())
      status = Error(ErrorCode::kTensorMetaInvalid, name + ": " + why);
  });
  if (!status.ok()) return status;
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    for (const auto& [name, m] :
         {std::pair<const char*, const TensorMeta*>{"k_pool", &l.k_pool}, {"v_pool", &l.v_pool}})
      if (const std::string why = meta_defect(*m); !why.empty())
        return Error(ErrorCode::kTensorMetaInvalid, layer_text(i) + " " + name + ": " + why);
  }
  return Status::Ok();
}

Status check_inputs_cover(const StackedCtxKvCase& c) {
  Status status;
  for_each_tensor(c, [&](const std::string& name, const HostTensor& t) {
    if (status.ok()) status = detail::check_bytes_cover(name, t);
  });
  return status;
}

// cache_loc [T], or with commit lengths cache_loc [B, S] (B * S == T) and commit_lens [B]
// (docs/contract.md §4.5, prefix-valid writes).
Status check_cache_loc_and_commit_lens(const StackedCtxKvCase& c) {
  const std::int64_t tokens = c.num_tokens();
  const HostTensor& loc = c.cache_loc;
  if (!c.has_commit_lens()) {
    if (!is_index_vector(loc, tokens))
      return Error(ErrorCode::kStackedCacheLocInvalid,
                   loc.present ? shape_text(loc.meta) + " for " + std::to_string(tokens) + " tokens" +
                                     (loc.meta.rank() == 2 ? " (a 2-D cache_loc needs commit_lens)" : "")
                               : "missing");
    return Status::Ok();
  }
  if (!loc.present || loc.meta.dtype != DType::kI64 || loc.meta.rank() != 2 || !loc.meta.contiguous() ||
      !checked_product({loc.meta.size(0), loc.meta.size(1)}) || loc.meta.size(0) * loc.meta.size(1) != tokens)
    return Error(ErrorCode::kStackedCacheLocInvalid,
                 (loc.present ? shape_text(loc.meta) : std::string("missing")) +
                     " with commit_lens: it must be [B, S] with B * S == " + std::to_string(tokens) + " tokens");
  const TensorMeta& m = c.commit_lens.meta;
  if (m.dtype != DType::kI64 || m.rank() != 1 || m.size(0) != loc.meta.size(0) || !m.contiguous())
    return Error(ErrorCode::kStackedCommitLensInvalid, shape_text(m) + " for cache_loc " + shape_text(loc.meta));
  return Status::Ok();
}

Status check_head_geometry(const StackedCtxKvLayer& l, int i) {
  const std::string where = layer_text(i) + ": head_dim " + std::to_string(l.head_dim) + ", " +
                            std::to_string(l.num_kv_heads) + " kv heads, q_size " + std::to_string(l.q_size);
  if (l.head_dim < 2 || l.head_dim > kMaxStackedHeadDim || l.head_dim % 2 != 0 || l.num_kv_heads < 1 || l.q_size < 0)
    return Error(ErrorCode::kStackedHeadGeometry, where);
  if (!checked_add(checked_product({2, l.num_kv_heads, l.head_dim}), CheckedI64{l.q_size}))
    return Error(ErrorCode::kStackedHeadGeometry, where + ": row count past int64");
  return Status::Ok();
}

Status check_pool(const TensorMeta& pool, const char* name, const StackedCtxKvLayer& l, int i, DType storage,
                  int device) {
  const std::string where = layer_text(i) + " " + name;
  if (pool.dtype != storage) return Error(ErrorCode::kStackedPoolDtype, where);
  if (pool.rank() != 3 || pool.size(1) != l.num_kv_heads || pool.size(2) != l.head_dim)
    return Error(ErrorCode::kStackedPoolShape, where + " is " + shape_text(pool));
  if (pool.stride(2) != 1 || pool.stride(1) != l.head_dim)
    return Error(ErrorCode::kStackedPoolStride, where + " strides (" + std::to_string(pool.stride(0)) + ", " +
                                                    std::to_string(pool.stride(1)) + ", " +
                                                    std::to_string(pool.stride(2)) + ")");
  if (pool.device != device)
    return Error(ErrorCode::kStackedDeviceMismatch, where + " on device " + std::to_string(pool.device));
  return Status::Ok();
}

Status check_layer(const StackedCtxKvCase& c, int i) {
  const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
  const std::string where = layer_text(i);
  if (Status s = check_head_geometry(l, i); !s.ok()) return s;
  const std::int64_t rows = l.q_size + l.kv_rows();
  const TensorMeta& w = l.qkv_weight.meta;
  if (!l.qkv_weight.present || !is_storage16(w.dtype))
    return Error(ErrorCode::kStackedWeightDtype, where + (l.qkv_weight.present ? "" : ": no QKV weight"));
  if (w.rank() != 2 || w.size(0) != rows || w.size(1) != c.hidden())
    return Error(ErrorCode::kStackedWeightShape, where + ": " + shape_text(w) + ", expected [" + std::to_string(rows) +
                                                     ", " + std::to_string(c.hidden()) + "]");
  if (!w.contiguous()) return Error(ErrorCode::kStackedWeightNotContiguous, where);
  if (l.qkv_bias.present) {
    const TensorMeta& b = l.qkv_bias.meta;
    if (b.dtype != w.dtype || b.rank() != 1 || b.size(0) != rows || !b.contiguous())
      return Error(ErrorCode::kStackedBiasInvalid, where + ": " + shape_text(b));
  }
  const TensorMeta& n = l.k_norm_weight.meta;
  if (!l.k_norm_weight.present || n.dtype != w.dtype || n.rank() != 1 || n.size(0) != l.head_dim || !n.contiguous())
    return Error(ErrorCode::kStackedNormWeightInvalid,
                 where + (l.k_norm_weight.present ? ": " + shape_text(n) : ": no K-norm weight"));
  const TensorMeta& t = l.cos_sin.meta;
  if (!l.cos_sin.present || t.dtype != DType::kF32 || t.rank() != 2 || t.size(1) != l.head_dim || !t.contiguous())
    return Error(ErrorCode::kStackedCosSinInvalid, where + (l.cos_sin.present ? ": " + shape_text(t) : ": no table"));
  const int device = c.x.meta.device;
  for (const HostTensor* tensor : {&l.qkv_weight, &l.qkv_bias, &l.k_norm_weight, &l.cos_sin})
    if (tensor->present && tensor->meta.device != device)
      return Error(ErrorCode::kStackedDeviceMismatch,
                   where + ": a tensor on device " + std::to_string(tensor->meta.device));
  if (Status s = check_pool(l.k_pool, "k_pool", l, i, c.storage_dtype(), device); !s.ok()) return s;
  return check_pool(l.v_pool, "v_pool", l, i, c.storage_dtype(), device);
}

Status check_contract(const StackedCtxKvCase& c) {
  if (c.layers.empty() || c.num_layers() > kMaxStackedLayers)
    return Error(ErrorCode::kStackedLayerCount, std::to_string(c.layers.size()) + " layers");
  if (!c.x.present) return Error(ErrorCode::kStackedXShape, "x is missing");
  if (!is_storage16(c.x.meta.dtype)) return Error(ErrorCode::kStackedXDtype);
  if (c.x.meta.rank() != 2 || c.x.meta.size(1) < 1)
    return Error(ErrorCode::kStackedXShape, "x is " + shape_text(c.x.meta));
  if (!c.x.meta.contiguous()) return Error(ErrorCode::kStackedXNotContiguous);
  const std::int64_t tokens = c.num_tokens();
  if (!is_index_vector(c.positions, tokens))
    return Error(
        ErrorCode::kStackedPositionsInvalid,
        c.positions.present ? shape_text(c.positions.meta) + " for " + std::to_string(tokens) + " tokens" : "missing");
  if (Status s = check_cache_loc_and_commit_lens(c); !s.ok()) return s;
  for (const HostTensor* t : {&c.positions, &c.cache_loc, &c.commit_lens})
    if (t->present && t->meta.device != c.x.meta.device)
      return Error(ErrorCode::kStackedDeviceMismatch, "an index tensor on device " + std::to_string(t->meta.device));
  for (int i = 0; i < c.num_layers(); ++i)
    if (Status s = check_layer(c, i); !s.ok()) return s;
  return Status::Ok();
}

// Two slots of a pool must not share an element: the slot stride covers a slot (or there is at
// most one slot). Metadata only, whatever the access.
Status check_strict_metadata(const StackedCtxKvCase& c, ValueAccess) {
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    for (const auto& [name, m] :
         {std::pair<const char*, const TensorMeta*>{"k_pool", &l.k_pool}, {"v_pool", &l.v_pool}})
      if (m->size(0) > 1 && m->stride(0) < l.kv_size())
        return Error(ErrorCode::kStackedPoolSlotsOverlap, layer_text(i) + " " + name + ": slot stride " +
                                                              std::to_string(m->stride(0)) + " < " +
                                                              std::to_string(l.kv_size()) + " elements");
  }
  return Status::Ok();
}

// The range rules: the oracle's own writes and reads depend on them. Commit lengths first (they
// decide which cache_loc entries are read at all: an uncommitted token's entry never is).
Status check_ranges(const StackedCtxKvCase& c, CacheLocPolicy policy) {
  if (c.has_commit_lens()) {
    const std::int64_t rows = c.commit_lens.meta.size(0);
    const std::int64_t s = c.commit_row_length();
    for (std::int64_t b = 0; b < rows; ++b) {
      const std::int64_t n = c.commit_lens.load<std::int64_t>(b);
      if (n < 0 || n > s)
        return Error(ErrorCode::kStackedCommitLenOutOfRange, "commit_lens[" + std::to_string(b) +
                                                                 "] = " + std::to_string(n) + " outside [0, " +
                                                                 std::to_string(s) + "]");
    }
  }
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
    if (!c.committed(t)) continue;
    const std::int64_t slot = c.cache_loc.load<std::int64_t>(t);
    if (slot < 0 && policy == CacheLocPolicy::kSlotZeroReserved)
      return Error(ErrorCode::kStackedNegativeCacheLoc,
                   "cache_loc " + std::to_string(slot) + " at token " + std::to_string(t));
    if (!writes_slot(slot, policy)) continue;
    for (int i = 0; i < c.num_layers(); ++i) {
      const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
      const std::int64_t slots = std::min(l.k_pool.size(0), l.v_pool.size(0));
      if (slot >= slots)
        return Error(ErrorCode::kStackedSlotOutOfRange, "cache_loc " + std::to_string(slot) + " at token " +
                                                            std::to_string(t) + ", " + layer_text(i) + " pool of " +
                                                            std::to_string(slots) + " slots");
      const std::int64_t p = c.positions.load<std::int64_t>(t);
      const std::int64_t max_pos = l.cos_sin.meta.size(0);
      if (p < 0 || p >= max_pos)
        return Error(ErrorCode::kStackedPositionOutOfRange, "position " + std::to_string(p) + " at token " +
                                                                std::to_string(t) + ", " + layer_text(i) + " max_pos " +
                                                                std::to_string(max_pos));
    }
  }
  return Status::Ok();
}

Status check_duplicates(const StackedCtxKvCase& c, CacheLocPolicy policy) {
  // A slot that writes nothing (0 when reserved) is no duplicate: first_repeated_slot skips < 0.
  const auto slot_at = [&](std::int64_t t) {
    if (!c.committed(t)) return std::int64_t{-1};
    const std::int64_t loc = c.cache_loc.load<std::int64_t>(t);
    return writes_slot(loc, policy) ? loc : std::int64_t{-1};
  };
  if (const auto r = detail::first_repeated_slot(c.num_tokens(), slot_at))
    return Error(ErrorCode::kStackedDuplicateSlot, "cache_loc " + std::to_string(r->slot) + " at tokens " +
                                                       std::to_string(r->first_row) + " and " +
                                                       std::to_string(r->second_row));
  return Status::Ok();
}

// The value rules: the ranges at every level, duplicate slots at kStrict.
template <CacheLocPolicy kPolicy>
Status check_values(const StackedCtxKvCase& c, ValidationLevel level) {
  if (Status s = check_ranges(c, kPolicy); !s.ok()) return s;
  return level == ValidationLevel::kStrict ? check_duplicates(c, kPolicy) : Status::Ok();
}

}  // namespace

Status validate_stacked_ctx_kv(const StackedCtxKvCase& c, ValidationLevel level, ValueAccess access,
                               CacheLocPolicy cache_loc) {
  // The rule steps are plain function pointers: one instantiation of the value rules per policy.
  const bool reserved = cache_loc == CacheLocPolicy::kSlotZeroReserved;
  return detail::validate_in_rule_order(
      c, level, access,
      detail::RuleSteps<StackedCtxKvCase>{
          check_metadata_well_formed, check_inputs_cover, check_contract, check_strict_metadata,
          reserved ? check_values<CacheLocPolicy::kSlotZeroReserved> : check_values<CacheLocPolicy::kNegativeSkipped>});
}

Status validate_stacked_ctx_kv_outputs(const StackedCtxKvCase& c, const StackedCtxKvOutputs& out) {
  const std::size_t layers = c.layers.size();
  if (out.k_pools.size() != layers || out.v_pools.size() != layers)
    return Error(ErrorCode::kStackedPoolBufferTooSmall, std::to_string(out.k_pools.size()) + " K and " +
                                                            std::to_string(out.v_pools.size()) + " V buffers for " +
                                                            std::to_string(layers) + " layers");
  for (std::size_t i = 0; i < layers; ++i) {
    const StackedCtxKvLayer& l = c.layers[i];
    const std::pair<const TensorMeta*, const std::vector<std::uint8_t>*> pools[] = {{&l.k_pool, &out.k_pools[i]},
                                                                                    {&l.v_pool, &out.v_pools[i]}};
    for (const auto& [meta, bytes] : pools) {
      const char* name = meta == &l.k_pool ? "K" : "V";
      if (const std::string why = meta_defect(*meta); !why.empty())
        return Error(ErrorCode::kTensorMetaInvalid, layer_text(static_cast<int>(i)) + " " + name + " pool: " + why);
      if (static_cast<std::int64_t>(bytes->size()) < meta->span_bytes())
        return Error(ErrorCode::kStackedPoolBufferTooSmall,
                     layer_text(static_cast<int>(i)) + " " + name + " pool: " + std::to_string(bytes->size()) +
                         " bytes, the view needs " + std::to_string(meta->span_bytes()));
    }
  }
  return Status::Ok();
}

Status resolve_stacked_path(StackedPathRequest request, const StackedEligibility& stacked,
                            const FusedEligibility& fused, StackedPath* path) {
  switch (request) {
    case StackedPathRequest::kPerLayer: *path = StackedPath::kPerLayer; return Status::Ok();
    case StackedPathRequest::kStacked:
      if (!stacked.eligible()) return Error(ErrorCode::kStackedPathIneligible, "stacked path: " + stacked.to_string());
      *path = StackedPath::kStacked;
      return Status::Ok();
    case StackedPathRequest::kFused:
      if (!fused.eligible()) return Error(ErrorCode::kStackedPathIneligible, "fused path: " + fused.to_string());
      *path = StackedPath::kFused;
      return Status::Ok();
    case StackedPathRequest::kAuto: break;
  }
  *path = fused.eligible() ? StackedPath::kFused : stacked.eligible() ? StackedPath::kStacked : StackedPath::kPerLayer;
  return Status::Ok();
}

}  // namespace kvc
