// abi_args.cpp: ABI argument structs filled from a case (see abi_args.h).
#include "testkit/device/abi_args.h"

#include <algorithm>
#include <utility>

#include "kvc/insert_inputs.h"

namespace kvc::testkit {

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kF32: return "f32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
    case DType::kE4M3: return "e4m3";
    case DType::kI32: return "i32";
  }
  return "dtype " + std::to_string(static_cast<int>(t));
}

std::string meta_inexpressible(const std::string& name, const TensorMeta& m) {
  if (m.sizes.size() != m.strides.size())
    return name + ": " + std::to_string(m.sizes.size()) + " sizes but " + std::to_string(m.strides.size()) +
           " strides (a DLTensor has one ndim)";
  if (m.offset_bytes < 0)
    return name + ": negative byte offset " + std::to_string(m.offset_bytes) + " (DLTensor.byte_offset is unsigned)";
  if (dtype_size(m.dtype) == 0) return name + ": " + dtype_name(m.dtype) + " has no DLPack type";
  return {};
}

// The cache view as a tensor: [num_blocks, block_size, width] with its strides, cut to its rank
// (a rank-2 cache is what the "cache rank" rule is tested with).
TensorMeta cache_meta(const CacheGeometry& g) {
  TensorMeta m;
  m.dtype = g.dtype;
  const std::int64_t sizes[] = {g.num_blocks, g.block_size, g.width};
  const std::int64_t strides[] = {g.stride0, g.stride1, g.stride2};
  for (int d = 0; d < std::min(g.rank, 3); ++d) {
    m.sizes.push_back(sizes[d]);
    m.strides.push_back(strides[d]);
  }
  m.offset_bytes = g.offset_bytes;
  m.device = g.device;
  return m;
}

std::string abi_inexpressible(const InsertCase& c) {
  if (c.op != InsertOp::kKvOnly && c.op != InsertOp::kLegacy)
    return "op code " + std::to_string(static_cast<int>(c.op)) + " has no ABI entry point";
  if (c.op == InsertOp::kLegacy && c.kv_norm_weight.present) return "the legacy op's ABI has no kv_norm weight";
  for (const auto& [name, t] : named_inputs(c)) {
    if (!t->present) continue;
    if (std::string why = meta_inexpressible(name, t->meta); !why.empty()) return why;
  }
  if (c.op == InsertOp::kLegacy)
    if (std::string why = meta_inexpressible("q_out", c.q_out); !why.empty()) return why;
  if (c.cache.rank < 0 || c.cache.rank > 3)
    return "k_cache: rank " + std::to_string(c.cache.rank) + " (the case describes 3 dims)";
  return meta_inexpressible("k_cache", cache_meta(c.cache));
}

namespace {

// An insert op's struct with struct_size set and the fields both insert ops take.
template <typename Args>
Args kv_side_args(const InsertCase& c, const InsertCallTensors& t) {
  Args a{};
  a.struct_size = sizeof a;
  a.kv = t.kv;
  a.kv_cache = t.kv_cache;
  a.slot_mapping = t.slot_mapping;
  a.position_ids = t.position_ids;
  a.cos_sin_cache = t.cos_sin_cache;
  a.fp8_scale = t.fp8_scale;
  a.block_size = c.block_size;
  a.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
  return a;
}

}  // namespace

kvc_kv_only_insert_args kv_only_insert_args(const InsertCase& c, const InsertCallTensors& t) {
  kvc_kv_only_insert_args a = kv_side_args<kvc_kv_only_insert_args>(c, t);
  a.kv_norm_weight = t.kv_norm_weight;
  a.kv_norm_eps = c.kv_norm_eps;
  return a;
}

kvc_legacy_insert_args legacy_insert_args(const InsertCase& c, const InsertCallTensors& t, std::int32_t force_grid) {
  kvc_legacy_insert_args a = kv_side_args<kvc_legacy_insert_args>(c, t);
  a.q = t.q;
  a.q_out = t.q_out;
  a.q_scale_inv = t.q_scale_inv;
  a.eps = c.eps;
  a.apply_q_norm = c.apply_q_norm ? 1 : 0;
  a.apply_q_rope = c.apply_q_rope ? 1 : 0;
  a.q_interleaved = c.q_interleaved ? 1 : 0;
  a.force_grid = force_grid;
  return a;
}

kvc_kv_norm_args kv_norm_args(const DLTensor* kv, const DLTensor* weight, const DLTensor* out, float eps) {
  kvc_kv_norm_args a{};
  a.struct_size = sizeof a;
  a.kv = kv;
  a.weight = weight;
  a.out = out;
  a.eps = eps;
  return a;
}

kvc_store_rotated_args store_rotated_args(const StoreCase& c, const DLTensor* rows, const DLTensor* indices,
                                          const DLTensor* kv_cache) {
  kvc_store_rotated_args a{};
  a.struct_size = sizeof a;
  a.rows = rows;
  a.indices = indices;
  a.kv_cache = kv_cache;
  a.block_size = c.block_size;
  a.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
  return a;
}

}  // namespace kvc::testkit
