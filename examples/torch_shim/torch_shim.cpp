// torch_shim.cpp: the kernel ABI over torch ops: run any torch extension's kernels (vLLM's _C, a
// custom op library) through the kvconform suite without writing C++ against them.
//
// On first use the shim reads its configuration (torch_shim_config.h, KVC_TORCH_SHIM_CONFIG),
// dlopens the extension libraries it names with lazy binding (their static initialisers register
// the ops with the dispatcher), and finds every configured op by its schema name
// (c10::Dispatcher::findSchemaOrThrow). Per ABI call it:
//   1. rejects a malformed call (NULL, struct_size too small, a non-CUDA tensor) with 403 and
//      validates the metadata with the contract's own rules (kvc::validate_insert, metadata
//      only), returning the rule's code with nothing launched;
//   2. wraps the caller's device buffers as tensors without copying (at::from_blob of data +
//      byte_offset with the DLPack sizes and strides, so a padded cache stays a strided view);
//   3. builds the op's boxed argument stack by the schema's argument names from the call's values
//      (vLLM's names, plus aliases and the config's "arguments" map; defaults and None for the
//      rest) and calls it with the caller's stream made current (CUDAStreamGuard over the
//      external stream), without synchronising.
// An op that throws after validation passed answers 401 when CUDA reports an error, else 403, with
// the op's message. What the config does not bind is declared unsupported with the reason, and a
// missing or broken config makes every op unsupported with that error, so the suite reports
// every case skipped and says why. No exception crosses the C boundary.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <torch/version.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "dlpack_case.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/status.h"
#include "kvc/validate.h"
#include "torch_shim_config.h"

namespace {

using kvc::DType;
using kvc::kernels::abi::cache_geometry;
using kvc::kernels::abi::first_element;
using kvc::kernels::abi::metadata_tensor;
using kvc::kernels::abi::structural_defect;
using kvc::kernels::abi::tensor_meta;
using kvc::torch_shim::AbiEntry;
using kvc::torch_shim::OpBinding;

#define KVC_END_OF(Type, field) (offsetof(Type, field) + sizeof(static_cast<Type*>(nullptr)->field))

struct Outcome {
  int status = KVC_STATUS_OK;
  std::string message;
};

Outcome rejected(const kvc::Status& s) { return {static_cast<int>(s.code), s.ToString()}; }
Outcome bad_argument(std::string m) { return {KVC_STATUS_BAD_ARGUMENT, std::move(m)}; }

// ---- the configured ops ---------------------------------------------------------------------

class Shim {
 public:
  static Shim& get() {
    static Shim shim;
    return shim;
  }

  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  const kvc::torch_shim::ShimConfig& config() const { return config_; }
  const c10::OperatorHandle& handle(const OpBinding* b) const { return handles_.at(b); }

  // A reason string that lives as long as the process (kvc_op_support.reason is not copied).
  const char* keep(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& s : reasons_)
      if (s == text) return s.c_str();
    reasons_.push_back(text);
    return reasons_.back().c_str();
  }

 private:
  Shim() {
    const char* path = std::getenv(kvc::torch_shim::kShimConfigEnv);
    try {
      if (path == nullptr || *path == '\0')
        throw kvc::torch_shim::ConfigError(std::string(kvc::torch_shim::kShimConfigEnv) +
                                           " is not set: it names the JSON file that binds the ABI's entry points to "
                                           "torch ops (examples/torch_shim/README.md)");
      config_ = kvc::torch_shim::load_shim_config(path);
      for (const std::string& lib : config_.libraries)
        if (dlopen(lib.c_str(), RTLD_LAZY | RTLD_GLOBAL) == nullptr)
          throw kvc::torch_shim::ConfigError("dlopen " + lib + ": " + dlerror());
      for (const auto& [entry, bindings] : config_.ops)
        for (const OpBinding& b : bindings)
          handles_.emplace(&b, c10::Dispatcher::singleton().findSchemaOrThrow(b.op.c_str(), b.overload.c_str()));
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    name_ = "kvconform torch shim over " + (error_.empty() ? config_.name : "nothing: NOT CONFIGURED: " + error_) +
            " (torch " + TORCH_VERSION + ")";
  }

  kvc::torch_shim::ShimConfig config_;
  std::map<const OpBinding*, c10::OperatorHandle> handles_;
  std::string error_;
  std::string name_;
  std::mutex mutex_;
  std::deque<std::string> reasons_;
};

// ---- DLPack -> tensors (no copy) and the values of a call -----------------------------------

c10::ScalarType scalar_type(DLDataType t) {
  const auto d = kvc::kernels::abi::dtype_of(t);
  switch (d.value_or(DType::kU8)) {
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF16:
      return at::kHalf;
    case DType::kF32:
      return at::kFloat;
    case DType::kI64:
      return at::kLong;
    case DType::kI32:
      return at::kInt;
    case DType::kE4M3:
#if TORCH_VERSION_MAJOR >= 2 && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1)
      return at::kFloat8_e4m3fn;
#else
      return at::kByte;  // no float8 dtype before torch 2.1: the bytes as uint8
#endif
    default:
      return at::kByte;
  }
}

at::Tensor wrap(const DLTensor& t) {
  std::vector<std::int64_t> sizes(t.shape, t.shape + t.ndim);
  std::vector<std::int64_t> strides =
      t.strides != nullptr ? std::vector<std::int64_t>(t.strides, t.strides + t.ndim) : kvc::contiguous_strides(sizes);
  const at::TensorOptions options =
      at::TensorOptions()
          .dtype(scalar_type(t.dtype))
          .device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(t.device.device_id)));
  return at::from_blob(first_element(t), sizes, strides, options);
}

using Values = std::map<std::string, c10::IValue>;

void put(Values& v, std::initializer_list<const char*> names, const c10::IValue& value) {
  for (const char* n : names) v[n] = value;
}

c10::IValue optional_tensor(const DLTensor* t) { return t != nullptr ? c10::IValue(wrap(*t)) : c10::IValue(); }

void put_kv_side(Values& v, const DLTensor& kv, const DLTensor& cache, const DLTensor& slots, const DLTensor& positions,
                 const DLTensor& cos_sin, const DLTensor* fp8_scale, std::int64_t block_size, bool kv_mxfp8) {
  put(v, {"kv"}, wrap(kv));
  put(v, {"k_cache", "kv_cache", "cache"}, wrap(cache));
  put(v, {"slot_mapping", "slots"}, wrap(slots));
  put(v, {"position_ids", "positions"}, wrap(positions));
  put(v, {"cos_sin_cache"}, wrap(cos_sin));
  put(v, {"fp8_scale"}, optional_tensor(fp8_scale));
  put(v, {"cache_block_size", "block_size"}, c10::IValue(block_size));
  put(v, {"kv_mxfp8"}, c10::IValue(kv_mxfp8));
}

// The op, called with the caller's stream current on the tensors' device.
Outcome call(const OpBinding& b, Values& values, int device, void* stream) {
  const c10::OperatorHandle& op = Shim::get().handle(&b);
  std::vector<c10::IValue> stack;
  for (const c10::Argument& a : op.schema().arguments()) {
    const auto rename = b.arguments.find(a.name());
    const std::string key = rename != b.arguments.end() ? rename->second : a.name();
    const auto it = values.find(key);
    if (it != values.end())
      stack.push_back(it->second);
    else if (a.default_value())
      stack.push_back(*a.default_value());
    else if (a.type()->kind() == c10::TypeKind::OptionalType)
      stack.push_back(c10::IValue());
    else
      return bad_argument("argument \"" + a.name() + "\" of " + b.display() +
                          " has no value in this ABI call (map it in the config's \"arguments\")");
  }
  try {
    const c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
    const c10::cuda::CUDAStreamGuard stream_guard(
        c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), static_cast<c10::DeviceIndex>(device)));
    op.callBoxed(&stack);
  } catch (const std::exception& e) {
    const cudaError_t cuda = cudaPeekAtLastError();
    return {cuda != cudaSuccess ? KVC_STATUS_CUDA_ERROR : KVC_STATUS_BAD_ARGUMENT, b.display() + " threw: " + e.what()};
  }
  return {};
}

std::string first_defect(std::initializer_list<std::pair<const DLTensor*, const char*>> tensors) {
  for (const auto& [t, name] : tensors)
    if (std::string d = structural_defect(t, name); !d.empty()) return d;
  return {};
}

std::string optional_defect(const DLTensor* t, const char* name) {
  return t == nullptr ? std::string() : structural_defect(t, name);
}

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

Outcome not_bound(const char* what, const kvc::InsertCase& c) {
  const auto f = kvc::format_of(c);
  return {KVC_STATUS_UNSUPPORTED, std::string("no torch op is bound to ") + what + " for " +
                                      std::string(f ? kvc::layout_of(*f).name : "this cache") + " (config " +
                                      Shim::get().config().name + ")"};
}

Outcome kv_only_insert(const kvc_kv_only_insert_args* a, void* stream) {
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

  const kvc::torch_shim::ShimConfig& config = Shim::get().config();
  const bool norm = a->kv_norm_weight != nullptr;
  const OpBinding* b =
      config.find(norm ? AbiEntry::kKvOnlyInsertKvNorm : AbiEntry::kKvOnlyInsert, *kvc::format_of(c), c.kv.meta.dtype);
  if (b == nullptr) return not_bound(norm ? "the KV-only insert with kv_norm" : "the KV-only insert", c);
  if (c.num_inserted() == 0) return {};  // no work: launch nothing
  Values v;
  put_kv_side(v, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
              a->block_size, a->kv_mxfp8 != 0);
  put(v, {"norm_weight", "kv_norm_weight", "weight"}, optional_tensor(a->kv_norm_weight));
  put(v, {"eps", "kv_norm_eps"}, c10::IValue(static_cast<double>(a->kv_norm_eps)));
  return call(*b, v, c.kv.meta.device, stream);
}

Outcome legacy_insert(const kvc_legacy_insert_args* a, void* stream) {
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

  const OpBinding* b = Shim::get().config().find(AbiEntry::kLegacyInsert, *kvc::format_of(c), c.kv.meta.dtype);
  if (b == nullptr) return not_bound("the legacy insert", c);
  if (c.num_rows() == 0) return {};
  Values v;
  put_kv_side(v, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
              a->block_size, a->kv_mxfp8 != 0);
  put(v, {"q", "q_in"}, wrap(*a->q));
  put(v, {"q_out", "q_fp8"}, wrap(*a->q_out));
  put(v, {"q_scale_inv", "q_fp8_scale_inv"}, optional_tensor(a->q_scale_inv));
  put(v, {"eps"}, c10::IValue(static_cast<double>(a->eps)));
  put(v, {"apply_q_norm"}, c10::IValue(a->apply_q_norm != 0));
  put(v, {"apply_q_rope"}, c10::IValue(a->apply_q_rope != 0));
  put(v, {"is_q_interleaved", "q_interleaved"}, c10::IValue(a->q_interleaved != 0));
  put(v, {"q_head_padded"}, c10::IValue(c.padded_heads()));
  const bool has_grid = a->struct_size >= KVC_END_OF(kvc_legacy_insert_args, force_grid);
  put(v, {"force_grid"}, c10::IValue(static_cast<std::int64_t>(has_grid ? a->force_grid : 0)));
  return call(*b, v, c.kv.meta.device, stream);
}

Outcome kv_norm(const kvc_kv_norm_args* a, void* stream) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (a->struct_size < KVC_END_OF(kvc_kv_norm_args, eps)) return bad_argument("struct_size too small");
  if (std::string d = first_defect({{a->kv, "kv"}, {a->weight, "weight"}, {a->out, "out"}}); !d.empty())
    return bad_argument(d);
  const kvc::HostTensor kv = metadata_tensor(*a->kv, DType::kF32);
  if (kvc::Status s =
          kvc::validate_kv_norm(kv, metadata_tensor(*a->weight, DType::kF32), kvc::ValueAccess::kMetadataOnly);
      !s.ok())
    return rejected(s);
  const kvc::TensorMeta out = tensor_meta(*a->out, DType::kF32);
  if (out.dtype != DType::kBF16 || out.sizes != kv.meta.sizes || !out.contiguous())
    return rejected(kvc::Error(kvc::ErrorCode::kKvShape, "kv_norm out must be a contiguous bf16 tensor of kv's shape"));
  const OpBinding* b = Shim::get().config().find(AbiEntry::kKvNorm, kvc::RecordFormat::kPacked584, kv.meta.dtype);
  if (b == nullptr) return {KVC_STATUS_UNSUPPORTED, "no torch op is bound to kv_norm"};
  if (kv.meta.size(0) == 0) return {};
  Values v;
  put(v, {"kv", "input", "x"}, wrap(*a->kv));
  put(v, {"weight", "norm_weight"}, wrap(*a->weight));
  put(v, {"out", "output"}, wrap(*a->out));
  put(v, {"eps"}, c10::IValue(static_cast<double>(a->eps)));
  return call(*b, v, kv.meta.device, stream);
}

template <typename Body>
int answer(char* error, size_t capacity, Body&& body) {
  Outcome o;
  try {
    if (!Shim::get().error().empty())
      o = {KVC_STATUS_UNSUPPORTED, "torch shim not configured: " + Shim::get().error()};
    else
      o = body();
  } catch (const std::exception& e) {
    o = bad_argument(std::string("internal error: ") + e.what());
  } catch (...) {
    o = bad_argument("internal error");
  }
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", o.message.c_str());
  return o.status;
}

void declare_policies(const kvc::torch_shim::ShimConfig& config, kvc_op_support* out) {
  if (out->struct_size < KVC_END_OF(kvc_op_support, amax_floor)) return;
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

}  // namespace

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  if (out == nullptr) return KVC_STATUS_BAD_ARGUMENT;
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = Shim::get().name().c_str();
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  if (out == nullptr || out->struct_size < KVC_END_OF(kvc_op_support, reason)) return KVC_STATUS_BAD_ARGUMENT;
  Shim& shim = Shim::get();
  out->supported = 0;
  out->reason = nullptr;
  out->q_norm_rsqrt = shim.config().q_norm_rsqrt;
  out->kv_norm_rsqrt = shim.config().kv_norm_rsqrt;
  declare_policies(shim.config(), out);
  if (!shim.error().empty()) {
    out->reason = shim.keep("torch shim not configured: " + shim.error());
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
      if (cache_format && dtype) b = shim.config().find(AbiEntry::kKvOnlyInsert, f, *dtype);
      break;
    case KVC_OP_LEGACY_INSERT:
      what = "the legacy insert";
      if (cache_format && dtype) b = shim.config().find(AbiEntry::kLegacyInsert, f, *dtype);
      break;
    case KVC_OP_KV_NORM:
      what = "kv_norm";
      if (dtype) b = shim.config().find(AbiEntry::kKvNorm, kvc::RecordFormat::kPacked584, *dtype);
      break;
    default:
      break;
  }
  if (b != nullptr) {
    out->supported = 1;
  } else {
    out->reason = shim.keep(std::string("the torch shim's config (") + shim.config().name + ") binds no op to " + what +
                            (cache_format ? " for " + std::string(kvc::layout_of(f).name) : std::string()) +
                            (dtype == DType::kF16 ? " with fp16 rows" : ""));
  }
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return answer(error, error_capacity, [&] { return kv_only_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return answer(error, error_capacity, [&] { return legacy_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return answer(error, error_capacity, [&] { return kv_norm(args, stream); });
}

}  // extern "C"
