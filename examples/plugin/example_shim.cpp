// example_shim.cpp: a kernel library for kvconform, written the way a third party would write one.
//
// To run your kernels through the kvconform GPU suite you build a shared object that exports the
// C kernel ABI (kvc/kernel_abi.h) and point KVC_KERNELS at it. This shim shows the whole pattern
// over a stand-in "native API": kvconform's own kernel host API (kvc/kernels/*.h: plain device
// pointers and geometry), in the place where a vLLM or SGLang shim would call its op's C++ entry.
// It does what every shim does:
//   1. Says who it is (kvc_library_info_get) and what it implements (kvc_op_support_get). This
//      one implements the KV-only insert and kv_norm and declares the legacy op unsupported, so
//      the suite reports every legacy case as skipped with this shim's reason (never as passed).
//   2. Per call: rejects a malformed call (NULL, struct_size too small, non-CUDA tensor) with
//      KVC_STATUS_BAD_ARGUMENT; turns the DLPack tensors into the contract's metadata and
//      validates it with the contract's own rules (kvc::validate_insert, metadata only), returning
//      the rule's stable code; nothing is launched for a rejected call.
//   3. Unpacks pointers (data + byte_offset) into the native call and enqueues it on the caller's
//      stream, without synchronising; a launch error becomes KVC_STATUS_CUDA_ERROR.
// No exception crosses the C boundary. Built only when CUDA is enabled; `ctest -L gpu` with
// KVC_KERNELS=<build>/examples/plugin/libkvc_example_shim.so runs the suite against it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/kernels/kv_insert.h"
#include "kvc/kernels/kv_norm.h"
#include "kvc/status.h"
#include "kvc/validate.h"

namespace {

using kvc::DType;

constexpr const char* kName = "kvconform example shim (KV-only insert and kv_norm over the kvconform kernel host API)";

// ---- DLPack -> the contract's metadata ------------------------------------------------------

// A dtype the contract does not know maps to `unknown`, chosen per argument so that the rule for
// that argument rejects it with its own code.
DType dtype_of(DLDataType t, DType unknown) {
  if (t.lanes != 1) return unknown;
  if (t.code == kDLBfloat && t.bits == 16) return DType::kBF16;
  if (t.code == kDLFloat && t.bits == 16) return DType::kF16;
  if (t.code == kDLFloat && t.bits == 32) return DType::kF32;
  if (t.code == kDLInt && t.bits == 64) return DType::kI64;
  if (t.code == kDLInt && t.bits == 32) return DType::kI32;
  if (t.code == kDLUInt && t.bits == 8) return DType::kU8;
  if (t.code == KVC_DL_FLOAT8_E4M3FN && t.bits == 8) return DType::kE4M3;
  return unknown;
}

void* first_element(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }

// Structural checks the contract has no rule for: the call itself is malformed.
std::string malformed(const DLTensor* t, const char* name) {
  if (t == nullptr) return std::string(name) + " is NULL";
  if (t->device.device_type != kDLCUDA) return std::string(name) + " is not a CUDA tensor";
  if (t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) return std::string(name) + " has no shape";
  return {};
}

kvc::TensorMeta meta_of(const DLTensor& t, DType unknown) {
  kvc::TensorMeta m;
  m.dtype = dtype_of(t.dtype, unknown);
  m.sizes.assign(t.shape, t.shape + t.ndim);
  m.strides = t.strides != nullptr ? std::vector<std::int64_t>(t.strides, t.strides + t.ndim)
                                   : kvc::contiguous_strides(m.sizes);
  // The alignment rules look at where element 0 lies modulo 16 bytes: the address is what counts.
  m.offset_bytes = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(first_element(t)) % kvc::kAlignment);
  m.device = t.device.device_id;
  return m;
}

kvc::HostTensor tensor_of(const DLTensor& t, DType unknown) {
  kvc::HostTensor h;  // metadata only: the bytes live on the device
  h.meta = meta_of(t, unknown);
  h.present = true;
  return h;
}

kvc::CacheGeometry cache_of(const DLTensor& t) {
  const kvc::TensorMeta m = meta_of(t, DType::kF32);  // f32 is no cache dtype: rule kCacheDtype
  kvc::CacheGeometry g;
  g.dtype = m.dtype;
  g.rank = m.rank();
  const auto dim = [&](int d, std::int64_t absent) { return m.rank() > d ? m.size(d) : absent; };
  const auto stride = [&](int d, std::int64_t absent) { return m.rank() > d ? m.stride(d) : absent; };
  g.num_blocks = dim(0, 0);
  g.block_size = dim(1, 0);
  g.width = dim(2, 0);
  g.stride0 = stride(0, 0);
  g.stride1 = stride(1, 0);
  g.stride2 = stride(2, 1);
  g.offset_bytes = m.offset_bytes;
  g.device = m.device;
  return g;
}

// ---- the calls ------------------------------------------------------------------------------

struct Outcome {
  int status = KVC_STATUS_OK;
  std::string message;
};

Outcome from_status(const kvc::Status& s) { return {static_cast<int>(s.code), s.ToString()}; }
Outcome from_cuda(cudaError_t e) {
  return e == cudaSuccess ? Outcome{} : Outcome{KVC_STATUS_CUDA_ERROR, std::string("launch: ") + cudaGetErrorString(e)};
}

Outcome kv_only_insert(const kvc_kv_only_insert_args* a, void* stream) {
  if (a == nullptr || a->struct_size < sizeof(kvc_kv_only_insert_args))
    return {KVC_STATUS_BAD_ARGUMENT, "args too small"};
  for (const auto& [t, name] : {std::pair{a->kv, "kv"},
                                {a->kv_cache, "kv_cache"},
                                {a->slot_mapping, "slot_mapping"},
                                {a->position_ids, "position_ids"},
                                {a->cos_sin_cache, "cos_sin_cache"}})
    if (std::string why = malformed(t, name); !why.empty()) return {KVC_STATUS_BAD_ARGUMENT, why};
  for (const auto& [t, name] : {std::pair{a->fp8_scale, "fp8_scale"}, {a->kv_norm_weight, "kv_norm_weight"}})
    if (t != nullptr)
      if (std::string why = malformed(t, name); !why.empty()) return {KVC_STATUS_BAD_ARGUMENT, why};

  // The contract's view of the call, validated with the contract's rules (metadata only: the
  // slot and position values live on the device; the kernels skip out-of-range ones there).
  kvc::InsertCase c;
  c.op = kvc::InsertOp::kKvOnly;
  c.kv = tensor_of(*a->kv, DType::kF32);
  c.slots = tensor_of(*a->slot_mapping, DType::kF32);
  c.positions = tensor_of(*a->position_ids, DType::kF32);
  c.cos_sin = tensor_of(*a->cos_sin_cache, DType::kI64);
  if (a->fp8_scale != nullptr) c.fp8_scale = tensor_of(*a->fp8_scale, DType::kI64);
  if (a->kv_norm_weight != nullptr) c.kv_norm_weight = tensor_of(*a->kv_norm_weight, DType::kF32);
  c.cache = cache_of(*a->kv_cache);
  c.block_size = a->block_size;
  c.kv_mxfp8 = a->kv_mxfp8 != 0;
  if (kvc::Status s = kvc::validate_insert(c, kvc::ValidationLevel::kStrict, kvc::ValueAccess::kMetadataOnly); !s.ok())
    return from_status(s);

  // The native call.
  kvc::kernels::KvOnlyInsertParams p;
  p.rows.kv = first_element(*a->kv);
  p.rows.count = c.num_inserted();
  p.rows.slots = static_cast<const std::int64_t*>(first_element(*a->slot_mapping));
  p.rows.positions = static_cast<const std::int64_t*>(first_element(*a->position_ids));
  p.rows.cos_sin = static_cast<const float*>(first_element(*a->cos_sin_cache));
  p.rows.max_pos = c.cos_sin.meta.size(0);
  p.cache.base = first_element(*a->kv_cache);
  p.cache.format = *kvc::format_of(c);
  p.cache.num_blocks = c.cache.num_blocks;
  p.cache.block_size = c.cache.block_size;
  p.cache.page_stride_bytes = c.cache.page_stride_bytes();
  p.cache.token_stride_bytes = c.cache.token_stride_bytes();
  if (p.cache.format == kvc::RecordFormat::kFp8_512)
    p.cache.fp8_scale = static_cast<const float*>(first_element(*a->fp8_scale));
  if (a->kv_norm_weight != nullptr) {
    p.norm.weight = static_cast<const std::uint16_t*>(first_element(*a->kv_norm_weight));
    p.norm.eps = a->kv_norm_eps;
  }
  if (p.rows.count == 0) return {};  // no work: launch nothing
  return from_cuda(kvc::kernels::kv_only_insert(p, static_cast<cudaStream_t>(stream)));
}

Outcome kv_norm(const kvc_kv_norm_args* a, void* stream) {
  if (a == nullptr || a->struct_size < sizeof(kvc_kv_norm_args)) return {KVC_STATUS_BAD_ARGUMENT, "args too small"};
  for (const auto& [t, name] : {std::pair{a->kv, "kv"}, {a->weight, "weight"}, {a->out, "out"}})
    if (std::string why = malformed(t, name); !why.empty()) return {KVC_STATUS_BAD_ARGUMENT, why};
  const kvc::HostTensor kv = tensor_of(*a->kv, DType::kF32);
  if (kvc::Status s = kvc::validate_kv_norm(kv, tensor_of(*a->weight, DType::kF32), kvc::ValueAccess::kMetadataOnly);
      !s.ok())
    return from_status(s);
  const kvc::TensorMeta out = meta_of(*a->out, DType::kF32);
  if (out.dtype != DType::kBF16 || out.sizes != kv.meta.sizes || !out.contiguous())
    return {KVC_STATUS_BAD_ARGUMENT, "out must be a contiguous bf16 tensor of kv's shape"};

  kvc::kernels::KvNormParams p;
  p.kv = static_cast<const std::uint16_t*>(first_element(*a->kv));
  p.out = static_cast<std::uint16_t*>(first_element(*a->out));
  p.weight = static_cast<const std::uint16_t*>(first_element(*a->weight));
  p.rows = kv.meta.size(0);
  p.eps = a->eps;
  if (p.rows == 0) return {};
  return from_cuda(kvc::kernels::kv_norm(p, static_cast<cudaStream_t>(stream)));
}

// Copies the message into the caller's buffer (always terminated) and returns the status.
template <typename Body>
int answer(char* error, size_t capacity, Body&& body) {
  Outcome o;
  try {
    o = body();
  } catch (const std::exception& e) {
    o = {KVC_STATUS_BAD_ARGUMENT, std::string("internal error: ") + e.what()};
  } catch (...) {
    o = {KVC_STATUS_BAD_ARGUMENT, "internal error"};
  }
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", o.message.c_str());
  return o.status;
}

}  // namespace

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  if (out == nullptr) return KVC_STATUS_BAD_ARGUMENT;
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = kName;
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  if (out == nullptr) return KVC_STATUS_BAD_ARGUMENT;
  // Correctly rounded rsqrt in both norms. A shim over a kernel that uses rsqrtf declares
  // KVC_RSQRT_APPROXIMATE here, and the suite checks its norm rows under that mode.
  out->q_norm_rsqrt = KVC_RSQRT_CORRECTLY_ROUNDED;
  out->kv_norm_rsqrt = KVC_RSQRT_CORRECTLY_ROUNDED;
  out->supported = 0;
  out->reason = nullptr;
  const bool bf16 = dtype_of(kv_dtype, DType::kU8) == DType::kBF16;
  if (op == KVC_OP_LEGACY_INSERT) {
    out->reason = "the example shim implements the KV-only insert and kv_norm only";
  } else if (!bf16) {
    out->reason = "bf16 rows only";
  } else if (op == KVC_OP_KV_NORM ||
             (op == KVC_OP_KV_ONLY_INSERT && format >= KVC_FORMAT_PACKED584 && format <= KVC_FORMAT_BF16_512)) {
    out->supported = 1;
  } else {
    out->reason = "unknown op or format";
  }
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return answer(error, error_capacity, [&] { return kv_only_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args*, void*, char* error, size_t error_capacity) {
  return answer(error, error_capacity, [] {
    return Outcome{KVC_STATUS_UNSUPPORTED, "the example shim has no legacy insert"};
  });
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return answer(error, error_capacity, [&] { return kv_norm(args, stream); });
}

}  // extern "C"
