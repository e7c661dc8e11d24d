// kernel_abi.cpp: the C kernel ABI (kvc/kernel_abi.h) implemented over our kernels.
//
// Each entry point: check the call and describe it as the contract's case (kvc/abi/*_call.h, the
// front-end the shims share: a malformed call -> KVC_STATUS_BAD_ARGUMENT, a broken rule of the
// contract at the strict level, metadata only -> the rule's code); then what our kernels require
// beyond the contract (scalar loads: each such tensor aligned to its element size) -> kMisaligned;
// launch on the tensors' device and stream; a launch error -> KVC_STATUS_CUDA_ERROR. Values
// (slots, positions) are not read on the host: the kernels skip out-of-range ones on the device.
// Nothing is launched for a rejected call or one with no work. No exception crosses the boundary.
#include "kvc/kernel_abi.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "device_scope.h"
#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/insert_call.h"
#include "kvc/abi/kv_norm_call.h"
#include "kvc/abi/op_support.h"
#include "kvc/abi/stacked_policies.h"
#include "kvc/abi/outcome.h"
#include "kvc/abi/store_rotated_call.h"
#include "kvc/abi/struct_size.h"
#include "kvc/insert_case.h"
#include "kvc/kernels/kv_insert.h"
#include "kvc/kernels/kv_norm.h"
#include "kvc/kernels/legacy_insert.h"
#include "kvc/kernels/store_rotated.h"
#include "kvc/profile.h"
#include "kvc/status.h"
#include "kvc/store_case.h"

#ifndef KVC_KERNELS_VERSION
#define KVC_KERNELS_VERSION "0.0.0"
#endif

namespace kvc::kernels::abi_wrapper {
namespace {

using abi::element_misalignment;
using abi::first_element;
using abi::Outcome;
using detail::DeviceScope;

Outcome cuda_failure(cudaError_t e, const char* what) {
  return Outcome{KVC_STATUS_CUDA_ERROR, std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

struct ScalarTensor {
  const DLTensor* tensor;  // NULL: an optional tensor not given
  const char* name;
  int element_bytes;
};

// Our kernels read these tensors with scalar loads: each must be aligned to its element size.
Outcome first_misalignment(std::initializer_list<ScalarTensor> tensors) {
  for (const ScalarTensor& t : tensors)
    if (t.tensor != nullptr)
      if (std::string m = element_misalignment(*t.tensor, t.element_bytes, t.name); !m.empty())
        return abi::rejected(Error(ErrorCode::kMisaligned, m));
  return {};
}

// The scalar-load tensors both insert ops take, then `own`, the op's own one.
template <typename Args>
Outcome kv_side_misalignment(const Args& a, ScalarTensor own) {
  return first_misalignment(
      {{a.slot_mapping, "slot_mapping", 8}, {a.position_ids, "position_ids", 8}, {a.fp8_scale, "fp8_scale", 4}, own});
}

template <typename Args>
KvRows kv_rows(const InsertCase& c, const Args& a) {
  KvRows r;
  r.kv = first_element(*a.kv);
  r.fp16 = c.kv.meta.dtype == DType::kF16;
  r.count = c.num_inserted();
  r.slots = static_cast<const std::int64_t*>(first_element(*a.slot_mapping));
  r.positions = static_cast<const std::int64_t*>(first_element(*a.position_ids));
  r.cos_sin = static_cast<const float*>(first_element(*a.cos_sin_cache));
  r.max_pos = c.cos_sin.meta.size(0);
  return r;
}

template <typename Args>
CacheTarget cache_target(const InsertCase& c, const Args& a) {
  CacheTarget t;
  t.base = first_element(*a.kv_cache);
  t.format = *format_of(c);
  t.num_blocks = c.cache.num_blocks;
  t.block_size = c.cache.block_size;
  t.page_stride_bytes = c.cache.page_stride_bytes();
  t.token_stride_bytes = c.cache.token_stride_bytes();
  t.fp8_scale = t.format == RecordFormat::kFp8_512 ? static_cast<const float*>(first_element(*a.fp8_scale)) : nullptr;
  return t;
}

template <typename Launch>
Outcome launch_on(int device, const char* what, Launch&& launch) {
  DeviceScope scope;
  if (cudaError_t e = scope.enter(device); e != cudaSuccess) return cuda_failure(e, "selecting the tensors' device");
  if (cudaError_t e = launch(); e != cudaSuccess) return cuda_failure(e, what);
  return {};
}

Outcome kv_only_insert(const kvc_kv_only_insert_args* a, void* stream) {
  InsertCase c;
  if (Outcome o = abi::check_kv_only_insert(a, &c); !o.ok()) return o;
  if (Outcome o = kv_side_misalignment(*a, {a->kv_norm_weight, "kv_norm_weight", 2}); !o.ok()) return o;

  KvOnlyInsertParams p;
  p.rows = kv_rows(c, *a);
  p.cache = cache_target(c, *a);
  if (a->kv_norm_weight != nullptr) {
    p.norm.weight = static_cast<const std::uint16_t*>(first_element(*a->kv_norm_weight));
    p.norm.eps = a->kv_norm_eps;
  }
  if (p.rows.count == 0) return {};
  return launch_on(c.kv.meta.device, "launching the KV-only insert",
                   [&] { return kvc::kernels::kv_only_insert(p, static_cast<cudaStream_t>(stream)); });
}

Outcome legacy_insert(const kvc_legacy_insert_args* a, void* stream) {
  InsertCase c;
  if (Outcome o = abi::check_legacy_insert(a, &c); !o.ok()) return o;
  if (Outcome o = kv_side_misalignment(*a, {a->q_scale_inv, "q_scale_inv", 4}); !o.ok()) return o;

  const RecordFormat format = *format_of(c);
  const bool packed = is_packed(format);
  LegacyInsertParams p;
  p.rows = kv_rows(c, *a);
  p.cache = cache_target(c, *a);
  p.q = first_element(*a->q);
  p.q_out = first_element(*a->q_out);
  p.tokens = c.num_rows();
  p.heads = c.q.meta.size(1);
  p.out_heads = packed ? c.padded_heads() : p.heads;
  p.q_scale_inv =
      format == RecordFormat::kFp8_512 ? static_cast<const float*>(first_element(*a->q_scale_inv)) : nullptr;
  p.eps = c.eps;
  p.q_norm = c.apply_q_norm;
  p.q_rope = packed ? c.apply_q_rope : true;
  p.q_interleaved = packed && c.q_interleaved;
  const std::int32_t force = abi::requested_grid(*a);
  p.grid = force == 1 ? LegacyGrid::kPerToken : force == 2 ? LegacyGrid::kLargeBatch : LegacyGrid::kAuto;
  if (p.tokens == 0 || (p.out_heads == 0 && p.rows.count == 0)) return {};
  return launch_on(c.kv.meta.device, "launching the legacy insert",
                   [&] { return kvc::kernels::legacy_insert(p, static_cast<cudaStream_t>(stream)); });
}

Outcome kv_norm(const kvc_kv_norm_args* a, void* stream) {
  abi::KvNormCall call;
  if (Outcome o = abi::check_kv_norm(a, &call); !o.ok()) return o;
  if (Outcome o = first_misalignment({{a->kv, "kv", 2}, {a->weight, "weight", 2}, {a->out, "out", 2}}); !o.ok())
    return o;

  KvNormParams p;
  p.kv = static_cast<const std::uint16_t*>(first_element(*a->kv));
  p.out = static_cast<std::uint16_t*>(first_element(*a->out));
  p.weight = static_cast<const std::uint16_t*>(first_element(*a->weight));
  p.rows = call.kv.meta.size(0);
  p.eps = a->eps;
  if (p.rows == 0) return {};
  return launch_on(call.kv.meta.device, "launching kv_norm",
                   [&] { return kvc::kernels::kv_norm(p, static_cast<cudaStream_t>(stream)); });
}

Outcome store_rotated(const kvc_store_rotated_args* a, void* stream) {
  StoreCase c;
  if (Outcome o = abi::check_store_rotated(a, &c); !o.ok()) return o;
  const bool int32 = c.indices.meta.dtype == DType::kI32;
  if (Outcome o = first_misalignment({{a->indices, "indices", int32 ? 4 : 8}}); !o.ok()) return o;

  const CacheGeometry g = store_cache_geometry(c);
  StoreRotatedParams p;
  p.rows = first_element(*a->rows);
  p.indices = first_element(*a->indices);
  p.indices_int32 = int32;
  p.count = c.num_rows();
  p.cache.base = first_element(*a->kv_cache);
  p.cache.format = store_format(c);
  p.cache.num_blocks = g.num_blocks;
  p.cache.block_size = g.block_size;
  p.cache.page_stride_bytes = g.page_stride_bytes();
  if (p.count == 0) return {};
  return launch_on(c.rows.meta.device, "launching the store op",
                   [&] { return kvc::kernels::store_rotated(p, static_cast<cudaStream_t>(stream)); });
}

constexpr const char* kLibraryName = "kvconform-kernels " KVC_KERNELS_VERSION;

// Why our kernels do not implement `op` for this cache format and row dtype, or nullptr when
// they do (kvc_op_support_get).
const char* unsupported_reason(int32_t op, std::optional<RecordFormat> cache_format, std::optional<DType> dtype) {
  const bool bf16 = dtype == DType::kBF16;
  const bool bf16_or_fp16 = bf16 || dtype == DType::kF16;
  switch (op) {
    case KVC_OP_KV_ONLY_INSERT:
    case KVC_OP_KV_ONLY_INSERT_KV_NORM:  // the same kernels, with kv_norm fused in front (kv_insert.cu)
      if (!cache_format) return "unknown cache format";
      return bf16 ? nullptr : "the KV-only insert takes bf16 rows only (docs/contract.md §4)";
    case KVC_OP_LEGACY_INSERT:
      if (!cache_format) return "unknown cache format";
      return bf16_or_fp16 ? nullptr : "the legacy insert takes bf16 or fp16 rows";
    case KVC_OP_KV_NORM: return bf16 ? nullptr : "kv_norm takes bf16 rows only (docs/contract.md §4)";
    case KVC_OP_STACKED_CTX_KV:  // kvc_stacked_ctx_kv (stacked_ctx_kv_abi.cpp); no cache format
      return bf16_or_fp16 ? nullptr : "the stacked context-KV projection takes bf16 or fp16 x";
    case KVC_OP_STACKED_CTX_KV_FUSED:  // the fused path (stacked_ctx_kv_fused.cu): bf16 models only
      return bf16 ? nullptr : "the fused stacked path takes bf16 models only (docs/contract.md §4.5)";
    case KVC_OP_STORE_ROTATED:
      if (!cache_format || !is_packed(*cache_format))
        return "the store op writes packed records only (docs/contract.md §6.4)";
      return bf16 ? nullptr : "the store op takes bf16 rows only (docs/contract.md §6.4)";
    default: return "unknown op";
  }
}

}  // namespace
}  // namespace kvc::kernels::abi_wrapper

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_library_info, name)) return KVC_STATUS_BAD_ARGUMENT;
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = kvc::kernels::abi_wrapper::kLibraryName;
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_op_support, reason)) return KVC_STATUS_BAD_ARGUMENT;
  // Both norms use the correctly rounded rsqrt (__frsqrt_rn): byte-exact in the default profile.
  out->q_norm_rsqrt = kvc::abi::abi_rsqrt(kvc::RsqrtMode::kCorrectlyRounded);
  out->kv_norm_rsqrt = kvc::abi::abi_rsqrt(kvc::RsqrtMode::kCorrectlyRounded);
  out->supported = 0;
  out->reason = nullptr;
  // Every op follows the contract's policies: profile vllm (written for callers of ABI 1.1+).
  kvc::abi::declare_policies(kvc::vllm_profile(), out);
  // No geometry limits beyond the contract's, and every validation code (for callers of 1.2+):
  // the wrapper validates each call with the contract's own rules (validate_insert, strict).
  static const kvc::abi::CapabilityDeclaration contract_capabilities;
  contract_capabilities.declare(out);
  // The stacked op's ABI entry point runs the contract's exact order on every path (for callers
  // of 1.3+); the other policies are reachable only through the test hook (stacked_ctx_kv_hook.h).
  kvc::abi::declare_stacked_policies(kvc::contract_stacked_profile(), out);
  out->reason = kvc::kernels::abi_wrapper::unsupported_reason(op, kvc::abi::record_format_of(format),
                                                              kvc::abi::dtype_of(kv_dtype));
  out->supported = out->reason == nullptr ? 1 : 0;
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity,
                          [&] { return kvc::kernels::abi_wrapper::kv_only_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity,
                          [&] { return kvc::kernels::abi_wrapper::legacy_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] { return kvc::kernels::abi_wrapper::kv_norm(args, stream); });
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity,
                          [&] { return kvc::kernels::abi_wrapper::store_rotated(args, stream); });
}

}  // extern "C"
