// abi_call.cpp: the kernel-ABI call taken apart for the shims (see abi_call.h).
#include "abi_call.h"

#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include "dlpack_case.h"
#include "kvc/insert_case.h"
#include "kvc/status.h"
#include "kvc/validate.h"

namespace kvc::shim {
namespace {

using kvc::kernels::abi::cache_geometry;
using kvc::kernels::abi::metadata_tensor;
using kvc::kernels::abi::structural_defect;
using kvc::kernels::abi::tensor_meta;

#define KVC_END_OF(Type, field) (offsetof(Type, field) + sizeof(static_cast<Type*>(nullptr)->field))

PreparedCall answered(int status, std::string message) {
  PreparedCall p;
  p.outcome = {status, std::move(message)};
  return p;
}
PreparedCall bad_argument(std::string m) { return answered(KVC_STATUS_BAD_ARGUMENT, std::move(m)); }
PreparedCall rejected(const kvc::Status& s) { return answered(static_cast<int>(s.code), s.ToString()); }

std::string first_defect(std::initializer_list<std::pair<const DLTensor*, const char*>> tensors) {
  for (const auto& [t, name] : tensors)
    if (std::string d = structural_defect(t, name); !d.empty()) return d;
  return {};
}

std::string optional_defect(const DLTensor* t, const char* name) {
  return t == nullptr ? std::string() : structural_defect(t, name);
}

void put(AbiValues& v, std::initializer_list<const char*> names, const AbiValue& value) {
  for (const char* n : names) v[n] = value;
}

AbiValue optional_tensor(const DLTensor* t) { return t != nullptr ? AbiValue(t) : AbiValue(); }

void fill_kv_side(kvc::InsertCase& c, const DLTensor& kv, const DLTensor& cache, const DLTensor& slots,
                  const DLTensor& positions, const DLTensor& cos_sin, const DLTensor* fp8_scale,
                  std::int64_t block_size, bool kv_mxfp8) {
  c.kv = metadata_tensor(kv, DType::kF32);
  c.slots = metadata_tensor(slots, DType::kF32);
  c.positions = metadata_tensor(positions, DType::kF32);
  c.cos_sin = metadata_tensor(cos_sin, DType::kI64);
  if (fp8_scale != nullptr) c.fp8_scale = metadata_tensor(*fp8_scale, DType::kI64);
  c.cache = cache_geometry(cache);
  c.block_size = block_size;
  c.kv_mxfp8 = kv_mxfp8;
}

void put_kv_side(AbiValues& v, const DLTensor& kv, const DLTensor& cache, const DLTensor& slots,
                 const DLTensor& positions, const DLTensor& cos_sin, const DLTensor* fp8_scale,
                 std::int64_t block_size, bool kv_mxfp8) {
  put(v, {"kv"}, &kv);
  put(v, {"k_cache", "kv_cache", "cache"}, &cache);
  put(v, {"slot_mapping", "slots"}, &slots);
  put(v, {"position_ids", "positions"}, &positions);
  put(v, {"cos_sin_cache"}, &cos_sin);
  put(v, {"fp8_scale"}, optional_tensor(fp8_scale));
  put(v, {"cache_block_size", "block_size"}, block_size);
  put(v, {"kv_mxfp8"}, kv_mxfp8);
}

PreparedCall not_bound(const ShimConfig& config, const char* op_kind, const char* what, const kvc::InsertCase& c) {
  const auto f = kvc::format_of(c);
  return answered(KVC_STATUS_UNSUPPORTED, std::string("no ") + op_kind + " is bound to " + what + " for " +
                                              std::string(f ? kvc::layout_of(*f).name : "this cache") + " (config " +
                                              config.name + ")");
}

}  // namespace

PreparedCall prepare_kv_only_insert(const ShimConfig& config, const char* op_kind, const kvc_kv_only_insert_args* a) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (a->struct_size < KVC_END_OF(kvc_kv_only_insert_args, kv_mxfp8)) return bad_argument("struct_size too small");
  if (std::string d = first_defect({{a->kv, "kv"},
                                    {a->kv_cache, "kv_cache"},
                                    {a->slot_mapping, "slot_mapping"},
                                    {a->position_ids, "position_ids"},
                                    {a->cos_sin_cache, "cos_sin_cache"}});
      !d.empty())
    return bad_argument(d);
  if (std::string d = optional_defect(a->fp8_scale, "fp8_scale"); !d.empty()) return bad_argument(d);
  if (std::string d = optional_defect(a->kv_norm_weight, "kv_norm_weight"); !d.empty()) return bad_argument(d);
  kvc::InsertCase c;
  c.op = kvc::InsertOp::kKvOnly;
  fill_kv_side(c, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
               a->block_size, a->kv_mxfp8 != 0);
  if (a->kv_norm_weight != nullptr) c.kv_norm_weight = metadata_tensor(*a->kv_norm_weight, DType::kF32);
  c.kv_norm_eps = a->kv_norm_eps;
  if (kvc::Status s = kvc::validate_insert(c, kvc::ValidationLevel::kStrict, kvc::ValueAccess::kMetadataOnly); !s.ok())
    return rejected(s);

  const bool norm = a->kv_norm_weight != nullptr;
  PreparedCall p;
  p.binding =
      config.find(norm ? AbiEntry::kKvOnlyInsertKvNorm : AbiEntry::kKvOnlyInsert, *kvc::format_of(c), c.kv.meta.dtype);
  if (p.binding == nullptr)
    return not_bound(config, op_kind, norm ? "the KV-only insert with kv_norm" : "the KV-only insert", c);
  p.device = c.kv.meta.device;
  p.nothing_to_do = c.num_inserted() == 0;
  put_kv_side(p.values, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
              a->block_size, a->kv_mxfp8 != 0);
  put(p.values, {"norm_weight", "kv_norm_weight", "weight"}, optional_tensor(a->kv_norm_weight));
  put(p.values, {"eps", "kv_norm_eps"}, static_cast<double>(a->kv_norm_eps));
  return p;
}

PreparedCall prepare_legacy_insert(const ShimConfig& config, const char* op_kind, const kvc_legacy_insert_args* a) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (a->struct_size < KVC_END_OF(kvc_legacy_insert_args, q_interleaved)) return bad_argument("struct_size too small");
  if (std::string d = first_defect({{a->q, "q"},
                                    {a->q_out, "q_out"},
                                    {a->kv, "kv"},
                                    {a->kv_cache, "kv_cache"},
                                    {a->slot_mapping, "slot_mapping"},
                                    {a->position_ids, "position_ids"},
                                    {a->cos_sin_cache, "cos_sin_cache"}});
      !d.empty())
    return bad_argument(d);
  if (std::string d = optional_defect(a->fp8_scale, "fp8_scale"); !d.empty()) return bad_argument(d);
  if (std::string d = optional_defect(a->q_scale_inv, "q_scale_inv"); !d.empty()) return bad_argument(d);
  kvc::InsertCase c;
  c.op = kvc::InsertOp::kLegacy;
  fill_kv_side(c, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
               a->block_size, a->kv_mxfp8 != 0);
  c.q = metadata_tensor(*a->q, DType::kF32);
  c.q_out = tensor_meta(*a->q_out, DType::kF32);
  if (a->q_scale_inv != nullptr) c.q_scale_inv = metadata_tensor(*a->q_scale_inv, DType::kI64);
  c.eps = a->eps;
  c.apply_q_norm = a->apply_q_norm != 0;
  c.apply_q_rope = a->apply_q_rope != 0;
  c.q_interleaved = a->q_interleaved != 0;
  if (kvc::Status s = kvc::validate_insert(c, kvc::ValidationLevel::kStrict, kvc::ValueAccess::kMetadataOnly); !s.ok())
    return rejected(s);

  PreparedCall p;
  p.binding = config.find(AbiEntry::kLegacyInsert, *kvc::format_of(c), c.kv.meta.dtype);
  if (p.binding == nullptr) return not_bound(config, op_kind, "the legacy insert", c);
  p.device = c.kv.meta.device;
  p.nothing_to_do = c.num_rows() == 0;
  put_kv_side(p.values, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
              a->block_size, a->kv_mxfp8 != 0);
  put(p.values, {"q", "q_in"}, a->q);
  put(p.values, {"q_out", "q_fp8"}, a->q_out);
  put(p.values, {"q_scale_inv", "q_fp8_scale_inv"}, optional_tensor(a->q_scale_inv));
  put(p.values, {"eps"}, static_cast<double>(a->eps));
  put(p.values, {"apply_q_norm"}, a->apply_q_norm != 0);
  put(p.values, {"apply_q_rope"}, a->apply_q_rope != 0);
  put(p.values, {"is_q_interleaved", "q_interleaved"}, a->q_interleaved != 0);
  put(p.values, {"q_head_padded"}, c.padded_heads());
  const bool has_grid = a->struct_size >= KVC_END_OF(kvc_legacy_insert_args, force_grid);
  put(p.values, {"force_grid"}, static_cast<std::int64_t>(has_grid ? a->force_grid : 0));
  return p;
}

PreparedCall prepare_kv_norm(const ShimConfig& config, const char* op_kind, const kvc_kv_norm_args* a) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (a->struct_size < KVC_END_OF(kvc_kv_norm_args, eps)) return bad_argument("struct_size too small");
  if (std::string d = first_defect({{a->kv, "kv"}, {a->weight, "weight"}, {a->out, "out"}}); !d.empty())
    return bad_argument(d);
  const kvc::HostTensor kv = metadata_tensor(*a->kv, DType::kF32);
  if (kvc::Status s =
          kvc::validate_kv_norm(kv, metadata_tensor(*a->weight, DType::kF32), kvc::ValueAccess::kMetadataOnly);
      !s.ok())
    return rejected(s);
  // The output is no argument of the contract's kv_norm (it returns rows): it must be kv's twin,
  // with the codes our own ABI wrapper answers.
  const kvc::TensorMeta out = tensor_meta(*a->out, DType::kF32);
  if (!out.well_formed()) return rejected(kvc::Error(kvc::ErrorCode::kTensorMetaInvalid, "kv_norm out"));
  if (out.dtype != DType::kBF16) return rejected(kvc::Error(kvc::ErrorCode::kKvDtype, "kv_norm out must be bf16"));
  if (out.sizes != kv.meta.sizes)
    return rejected(kvc::Error(kvc::ErrorCode::kKvShape, "kv_norm out must have kv's shape"));
  if (!out.contiguous())
    return rejected(kvc::Error(kvc::ErrorCode::kKvNotContiguous, "kv_norm out must be contiguous"));
  if (out.device != kv.meta.device)
    return rejected(kvc::Error(kvc::ErrorCode::kDeviceMismatch, "kv_norm out on device " + std::to_string(out.device)));
  PreparedCall p;
  p.binding = config.find(AbiEntry::kKvNorm, kvc::RecordFormat::kPacked584, kv.meta.dtype);
  if (p.binding == nullptr) return answered(KVC_STATUS_UNSUPPORTED, std::string("no ") + op_kind + " is bound to kv_norm");
  p.device = kv.meta.device;
  p.nothing_to_do = kv.meta.size(0) == 0;
  put(p.values, {"kv", "input", "x"}, a->kv);
  put(p.values, {"weight", "norm_weight"}, a->weight);
  put(p.values, {"out", "output"}, a->out);
  put(p.values, {"eps"}, static_cast<double>(a->eps));
  return p;
}

const char* ReasonStore::keep(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& s : texts_)
    if (s == text) return s.c_str();
  texts_.push_back(text);
  return texts_.back().c_str();
}

void copy_message(const std::string& message, char* error, std::size_t capacity) {
  std::snprintf(error, capacity, "%s", message.c_str());
}

int declare_support(ShimState& shim, std::int32_t op, std::int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  if (out == nullptr || out->struct_size < KVC_END_OF(kvc_op_support, reason)) return KVC_STATUS_BAD_ARGUMENT;
  const ShimConfig& config = shim.config;
  out->supported = 0;
  out->reason = nullptr;
  out->q_norm_rsqrt = config.q_norm_rsqrt;
  out->kv_norm_rsqrt = config.kv_norm_rsqrt;
  if (out->struct_size >= KVC_END_OF(kvc_op_support, amax_floor)) {
    const auto value = [&](const char* field) {
      const auto it = config.policies.find(field);
      return it == config.policies.end() ? 0 : it->second;
    };
    out->rope = value("rope");
    out->clamp_order = value("clamp_order");
    out->inf_block = value("inf_block");
    out->pad_byte = value("pad_byte");
    out->scale_exponent = value("scale_exponent");
    out->amax_floor = value("amax_floor");
  }
  if (!shim.error.empty()) {
    out->reason = shim.reasons.keep(std::string(shim.shim_kind) + " not configured: " + shim.error);
    return KVC_STATUS_OK;
  }
  const std::optional<DType> dtype = kvc::kernels::abi::dtype_of(kv_dtype);
  const bool cache_format = format >= KVC_FORMAT_PACKED584 && format <= KVC_FORMAT_BF16_512;
  const auto f = static_cast<kvc::RecordFormat>(cache_format ? format : 0);
  const OpBinding* b = nullptr;
  const char* what = "unknown op";
  switch (op) {
    case KVC_OP_KV_ONLY_INSERT:
      what = "the KV-only insert";
      if (cache_format && dtype) b = config.find(AbiEntry::kKvOnlyInsert, f, *dtype);
      break;
    case KVC_OP_LEGACY_INSERT:
      what = "the legacy insert";
      if (cache_format && dtype) b = config.find(AbiEntry::kLegacyInsert, f, *dtype);
      break;
    case KVC_OP_KV_NORM:
      what = "kv_norm";
      if (dtype) b = config.find(AbiEntry::kKvNorm, kvc::RecordFormat::kPacked584, *dtype);
      break;
    default:
      break;
  }
  if (b != nullptr) {
    out->supported = 1;
  } else {
    out->reason = shim.reasons.keep(std::string("the ") + shim.shim_kind + "'s config (" + config.name + ") binds no " +
                                    shim.op_kind + " to " + what +
                                    (cache_format ? " for " + std::string(kvc::layout_of(f).name) : std::string()) +
                                    (dtype == DType::kF16 ? " with fp16 rows" : ""));
  }
  return KVC_STATUS_OK;
}

}  // namespace kvc::shim
