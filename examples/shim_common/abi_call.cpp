// abi_call.cpp: the kernel-ABI call taken apart for the shims (see abi_call.h).
#include "abi_call.h"

#include <initializer_list>
#include <optional>
#include <utility>

#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/insert_call.h"
#include "kvc/abi/kv_norm_call.h"
#include "kvc/abi/struct_size.h"
#include "kvc/insert_case.h"

namespace kvc::shim {
namespace {

PreparedCall answered(Outcome o) {
  PreparedCall p;
  p.outcome = std::move(o);
  return p;
}

void put(AbiValues& v, std::initializer_list<const char*> names, const AbiValue& value) {
  for (const char* n : names) v[n] = value;
}

AbiValue optional_tensor(const DLTensor* t) { return t != nullptr ? AbiValue(t) : AbiValue(); }

void put_kv_side(AbiValues& v, const DLTensor& kv, const DLTensor& cache, const DLTensor& slots,
                 const DLTensor& positions, const DLTensor& cos_sin, const DLTensor* fp8_scale, std::int64_t block_size,
                 bool kv_mxfp8) {
  put(v, {"kv"}, &kv);
  put(v, {"k_cache", "kv_cache", "cache"}, &cache);
  put(v, {"slot_mapping", "slots"}, &slots);
  put(v, {"position_ids", "positions"}, &positions);
  put(v, {"cos_sin_cache"}, &cos_sin);
  put(v, {"fp8_scale"}, optional_tensor(fp8_scale));
  put(v, {"cache_block_size", "block_size"}, block_size);
  put(v, {"kv_mxfp8"}, kv_mxfp8);
}

// What a call asks of the config: its entry point, and the tensors its (format, kv dtype) and
// geometry are read from. `cache` is NULL for kv_norm.
struct CallKey {
  AbiEntry entry;
  const char* what;  // "the KV-only insert", for messages
  const DLTensor* cache;
  bool kv_mxfp8;
  DLDataType kv_dtype;
  std::int64_t block_size;
};

// The binding that serves a well-formed call (`checked`: OK or a validation code), or nullptr with
// *answer set to what stops it, in the order of kernel ABI 1.2: support first, as
// kvc_op_support_get declares it: a (format, kv dtype) no binding serves, or a geometry outside
// the binding's limits, 402 whatever else is wrong with the call; then the broken rule's code.
// A call whose cache dtype selects no format, or whose rows the contract does not take for the
// op (kKvDtype), asks no question of support: the contract's own code answers it.
const OpBinding* bind_call(const ShimConfig& config, const char* op_kind, const CallKey& key, const Outcome& checked,
                           Outcome* answer) {
  *answer = checked;
  std::optional<kvc::RecordFormat> format = kvc::RecordFormat::kPacked584;  // kv_norm: any (ShimConfig::find)
  kvc::CacheGeometry geometry;
  if (key.cache != nullptr) {
    geometry = abi::cache_geometry(*key.cache);
    format = kvc::format_of(geometry.dtype, key.kv_mxfp8);
  }
  const std::optional<kvc::DType> dtype = abi::dtype_of(key.kv_dtype);
  if (!format || !dtype || checked.status == static_cast<int>(kvc::ErrorCode::kKvDtype)) {
    if (!checked.ok()) return nullptr;
    *answer = {KVC_STATUS_UNSUPPORTED, std::string(key.what) + ": no cache format or row dtype to look up"};
    return nullptr;
  }
  const std::string where =
      (key.cache != nullptr ? std::string(" for ") + std::string(kvc::layout_of(*format).name) : std::string()) +
      (dtype == kvc::DType::kF16 ? " with fp16 rows" : "");
  const OpBinding* b = config.find(key.entry, *format, *dtype);
  if (b == nullptr) {
    *answer = {KVC_STATUS_UNSUPPORTED,
               std::string("no ") + op_kind + " is bound to " + key.what + where + " (config " + config.name + ")"};
    return nullptr;
  }
  if (key.cache != nullptr) {
    if (std::string why = outside_limits(b->limits, *format, key.block_size, geometry.checked_page_stride_bytes());
        !why.empty()) {
      *answer = {KVC_STATUS_UNSUPPORTED,
                 b->display() + " (config " + config.name + ") does not take this cache: " + why};
      return nullptr;
    }
  }
  if (!checked.ok()) return nullptr;
  *answer = {};
  return b;
}

}  // namespace

PreparedCall prepare_kv_only_insert(const ShimConfig& config, const char* op_kind, const kvc_kv_only_insert_args* a) {
  kvc::InsertCase c;
  const Outcome checked = abi::check_kv_only_insert(a, &c);
  if (checked.status == KVC_STATUS_BAD_ARGUMENT) return answered(checked);  // no tensor to read

  const bool norm = a->kv_norm_weight != nullptr;
  PreparedCall p;
  p.binding = bind_call(config, op_kind,
                        {norm ? AbiEntry::kKvOnlyInsertKvNorm : AbiEntry::kKvOnlyInsert,
                         norm ? "the KV-only insert with kv_norm" : "the KV-only insert", a->kv_cache, a->kv_mxfp8 != 0,
                         a->kv->dtype, a->block_size},
                        checked, &p.outcome);
  if (p.binding == nullptr) return p;
  p.device = c.kv.meta.device;
  p.nothing_to_do = c.num_inserted() == 0;
  put_kv_side(p.values, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
              a->block_size, a->kv_mxfp8 != 0);
  put(p.values, {"norm_weight", "kv_norm_weight", "weight"}, optional_tensor(a->kv_norm_weight));
  put(p.values, {"eps", "kv_norm_eps"}, static_cast<double>(a->kv_norm_eps));
  return p;
}

PreparedCall prepare_legacy_insert(const ShimConfig& config, const char* op_kind, const kvc_legacy_insert_args* a) {
  kvc::InsertCase c;
  const Outcome checked = abi::check_legacy_insert(a, &c);
  if (checked.status == KVC_STATUS_BAD_ARGUMENT) return answered(checked);  // no tensor to read

  PreparedCall p;
  p.binding = bind_call(
      config, op_kind,
      {AbiEntry::kLegacyInsert, "the legacy insert", a->kv_cache, a->kv_mxfp8 != 0, a->kv->dtype, a->block_size},
      checked, &p.outcome);
  if (p.binding == nullptr) return p;
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
  put(p.values, {"force_grid"}, static_cast<std::int64_t>(abi::requested_grid(*a)));
  return p;
}

PreparedCall prepare_kv_norm(const ShimConfig& config, const char* op_kind, const kvc_kv_norm_args* a) {
  // The output's checks (kv's twin) answer the codes our own ABI wrapper answers.
  abi::KvNormCall call;
  const Outcome checked = abi::check_kv_norm(a, &call);
  if (checked.status == KVC_STATUS_BAD_ARGUMENT) return answered(checked);  // no tensor to read

  PreparedCall p;
  p.binding =
      bind_call(config, op_kind, {AbiEntry::kKvNorm, "kv_norm", nullptr, false, a->kv->dtype, 0}, checked, &p.outcome);
  if (p.binding == nullptr) return p;
  p.device = call.kv.meta.device;
  p.nothing_to_do = call.kv.meta.size(0) == 0;
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

int declare_support(ShimState& shim, std::int32_t op, std::int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_op_support, reason)) return KVC_STATUS_BAD_ARGUMENT;
  const ShimConfig& config = shim.config;
  out->supported = 0;
  out->reason = nullptr;
  out->q_norm_rsqrt = config.q_norm_rsqrt;
  out->kv_norm_rsqrt = config.kv_norm_rsqrt;
  if (out->struct_size >= KVC_ABI_END_OF(kvc_op_support, amax_floor)) {
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
  // ABI 1.2: no limits unless the binding found below declares them; every validation code of
  // the contract, which abi_call checks on the op's behalf before forwarding (KVC_VALIDATION_ALL).
  const bool limits_covered = out->struct_size >= KVC_ABI_END_OF(kvc_op_support, enforced_codes);
  if (limits_covered) {
    declare_limits(GeometryLimits{}, out);
    out->cache_ranks = 0;
    out->index_dtypes = 0;
    out->validation = KVC_VALIDATION_ALL;
    out->enforced_code_count = 0;
    out->enforced_codes = nullptr;
  }
  if (!shim.error.empty()) {
    out->reason = shim.reasons.keep(std::string(shim.shim_kind) + " not configured: " + shim.error);
    return KVC_STATUS_OK;
  }
  const std::optional<DType> dtype = abi::dtype_of(kv_dtype);
  const std::optional<kvc::RecordFormat> f = abi::record_format_of(format);
  const OpBinding* b = nullptr;
  const char* what = "unknown op";
  switch (op) {
    case KVC_OP_KV_ONLY_INSERT:
      what = "the KV-only insert";
      if (f && dtype) b = config.find(AbiEntry::kKvOnlyInsert, *f, *dtype);
      break;
    case KVC_OP_KV_ONLY_INSERT_KV_NORM:
      what = "the KV-only insert with kv_norm";
      if (f && dtype) b = config.find(AbiEntry::kKvOnlyInsertKvNorm, *f, *dtype);
      break;
    case KVC_OP_LEGACY_INSERT:
      what = "the legacy insert";
      if (f && dtype) b = config.find(AbiEntry::kLegacyInsert, *f, *dtype);
      break;
    case KVC_OP_KV_NORM:
      what = "kv_norm";
      if (dtype) b = config.find(AbiEntry::kKvNorm, kvc::RecordFormat::kPacked584, *dtype);
      break;
    default: break;
  }
  if (b != nullptr) {
    out->supported = 1;
    if (limits_covered && op != KVC_OP_KV_NORM) declare_limits(b->limits, out);
  } else {
    out->reason = shim.reasons.keep(std::string("the ") + shim.shim_kind + "'s config (" + config.name + ") binds no " +
                                    shim.op_kind + " to " + what +
                                    (f ? " for " + std::string(kvc::layout_of(*f).name) : std::string()) +
                                    (dtype == DType::kF16 ? " with fp16 rows" : ""));
  }
  return KVC_STATUS_OK;
}

}  // namespace kvc::shim
