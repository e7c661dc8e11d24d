// kernel_abi.cpp: the C kernel ABI (kvc/kernel_abi.h) implemented over our kernels.
//
// Each entry point: check the argument struct and every tensor structurally (NULL, CUDA device,
// shape) -> KVC_STATUS_BAD_ARGUMENT; build the case's metadata and validate it with the contract's
// rules at the strict level, metadata only (our kernels use 16-byte vector accesses, so alignment
// and page stride >= dense page are required) -> the rule's code; launch on the tensors' device
// and stream; a launch error -> KVC_STATUS_CUDA_ERROR. Values (slots, positions) are not read on
// the host: the kernels skip out-of-range ones on the device. Nothing is launched for a rejected
// call or one with no work. No exception crosses the boundary.
#include "kvc/kernel_abi.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>

#include "dlpack_case.h"
#include "device_scope.h"
#include "kvc/insert_case.h"
#include "kvc/kernels/kv_insert.h"
#include "kvc/kernels/kv_norm.h"
#include "kvc/kernels/legacy_insert.h"
#include "kvc/kernels/store_rotated.h"
#include "kvc/status.h"
#include "kvc/store_case.h"
#include "kvc/validate.h"
#include "kvc/validate_store.h"

#ifndef KVC_KERNELS_VERSION
#define KVC_KERNELS_VERSION "0.0.0"
#endif

namespace kvc::kernels::abi {
namespace {

// A call's outcome: a status number and its message.
struct Outcome {
  int status = KVC_STATUS_OK;
  std::string message;
};

Outcome bad_argument(std::string message) { return Outcome{KVC_STATUS_BAD_ARGUMENT, std::move(message)}; }
Outcome rejected(const Status& s) { return Outcome{static_cast<int>(s.code), s.ToString()}; }
Outcome cuda_failure(cudaError_t e, const char* what) {
  return Outcome{KVC_STATUS_CUDA_ERROR, std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

int finish(const Outcome& o, char* error, std::size_t capacity) {
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", o.message.c_str());
  return o.status;
}

// The argument struct covers `field` (the caller's struct_size says how much it filled in).
template <typename Args>
bool covers(const Args* args, std::size_t end_of_field) {
  return args->struct_size >= end_of_field;
}
#define KVC_END_OF(Type, field) (offsetof(Type, field) + sizeof(static_cast<Type*>(nullptr)->field))

using detail::DeviceScope;

struct NamedTensor {
  const DLTensor* tensor;
  const char* name;
};

std::string first_defect(std::initializer_list<NamedTensor> tensors) {
  for (const NamedTensor& t : tensors)
    if (std::string d = structural_defect(t.tensor, t.name); !d.empty()) return d;
  return {};
}

// Optional tensors: checked only when present.
std::string optional_defect(const DLTensor* t, const char* name) {
  return t == nullptr ? std::string() : structural_defect(t, name);
}

std::string first_misalignment(std::initializer_list<std::pair<NamedTensor, int>> tensors) {
  for (const auto& [t, bytes] : tensors)
    if (t.tensor != nullptr)
      if (std::string m = element_misalignment(*t.tensor, bytes, t.name); !m.empty()) return m;
  return {};
}

Outcome misaligned(const std::string& what) { return rejected(Error(ErrorCode::kMisaligned, what)); }

// The fields common to both insert ops.
void fill_kv_side(InsertCase& c, const DLTensor& kv, const DLTensor& cache, const DLTensor& slots,
                  const DLTensor& positions, const DLTensor& cos_sin, const DLTensor* fp8_scale,
                  std::int64_t block_size, bool kv_mxfp8) {
  c.kv = metadata_tensor(kv, DType::kF32);                                           // unknown dtype -> kKvDtype
  c.slots = metadata_tensor(slots, DType::kF32);                                     // -> kSlotsInvalid
  c.positions = metadata_tensor(positions, DType::kF32);                             // -> kPositionsInvalid
  c.cos_sin = metadata_tensor(cos_sin, DType::kI64);                                 // -> kCosSinInvalid
  if (fp8_scale != nullptr) c.fp8_scale = metadata_tensor(*fp8_scale, DType::kI64);  // -> kFp8ScaleShape
  c.cache = cache_geometry(cache);
  c.block_size = block_size;
  c.kv_mxfp8 = kv_mxfp8;
}

KvRows kv_rows(const InsertCase& c, const DLTensor& kv, const DLTensor& slots, const DLTensor& positions,
               const DLTensor& cos_sin) {
  KvRows r;
  r.kv = first_element(kv);
  r.fp16 = c.kv.meta.dtype == DType::kF16;
  r.count = c.num_inserted();
  r.slots = static_cast<const std::int64_t*>(first_element(slots));
  r.positions = static_cast<const std::int64_t*>(first_element(positions));
  r.cos_sin = static_cast<const float*>(first_element(cos_sin));
  r.max_pos = c.cos_sin.meta.size(0);
  return r;
}

CacheTarget cache_target(const InsertCase& c, const DLTensor& cache, const DLTensor* fp8_scale) {
  CacheTarget t;
  t.base = first_element(cache);
  t.format = *format_of(c);
  t.num_blocks = c.cache.num_blocks;
  t.block_size = c.cache.block_size;
  t.page_stride_bytes = c.cache.page_stride_bytes();
  t.token_stride_bytes = c.cache.token_stride_bytes();
  t.fp8_scale = t.format == RecordFormat::kFp8_512 ? static_cast<const float*>(first_element(*fp8_scale)) : nullptr;
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
  if (a == nullptr) return bad_argument("args is NULL");
  if (!covers(a, KVC_END_OF(kvc_kv_only_insert_args, kv_mxfp8)))
    return bad_argument("struct_size " + std::to_string(a->struct_size) + " does not cover kvc_kv_only_insert_args");
  if (std::string d = first_defect({{a->kv, "kv"},
                                    {a->kv_cache, "kv_cache"},
                                    {a->slot_mapping, "slot_mapping"},
                                    {a->position_ids, "position_ids"},
                                    {a->cos_sin_cache, "cos_sin_cache"}});
      !d.empty())
    return bad_argument(d);
  if (std::string d = optional_defect(a->fp8_scale, "fp8_scale"); !d.empty()) return bad_argument(d);
  if (std::string d = optional_defect(a->kv_norm_weight, "kv_norm_weight"); !d.empty()) return bad_argument(d);

  InsertCase c;
  c.op = InsertOp::kKvOnly;
  fill_kv_side(c, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
               a->block_size, a->kv_mxfp8 != 0);
  if (a->kv_norm_weight != nullptr) c.kv_norm_weight = metadata_tensor(*a->kv_norm_weight, DType::kF32);
  c.kv_norm_eps = a->kv_norm_eps;
  if (Status s = validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok()) return rejected(s);
  if (std::string m = first_misalignment({{{a->slot_mapping, "slot_mapping"}, 8},
                                          {{a->position_ids, "position_ids"}, 8},
                                          {{a->fp8_scale, "fp8_scale"}, 4},
                                          {{a->kv_norm_weight, "kv_norm_weight"}, 2}});
      !m.empty())
    return misaligned(m);

  KvOnlyInsertParams p;
  p.rows = kv_rows(c, *a->kv, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache);
  p.cache = cache_target(c, *a->kv_cache, a->fp8_scale);
  if (a->kv_norm_weight != nullptr) {
    p.norm.weight = static_cast<const std::uint16_t*>(first_element(*a->kv_norm_weight));
    p.norm.eps = a->kv_norm_eps;
  }
  if (p.rows.count == 0) return {};
  return launch_on(c.kv.meta.device, "launching the KV-only insert",
                   [&] { return kvc::kernels::kv_only_insert(p, static_cast<cudaStream_t>(stream)); });
}

Outcome legacy_insert(const kvc_legacy_insert_args* a, void* stream) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (!covers(a, KVC_END_OF(kvc_legacy_insert_args, q_interleaved)))
    return bad_argument("struct_size " + std::to_string(a->struct_size) + " does not cover kvc_legacy_insert_args");
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

  InsertCase c;
  c.op = InsertOp::kLegacy;
  fill_kv_side(c, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
               a->block_size, a->kv_mxfp8 != 0);
  c.q = metadata_tensor(*a->q, DType::kF32);                                                     // -> kQDtype
  c.q_out = tensor_meta(*a->q_out, DType::kF32);                                                 // -> kQOutDtype
  if (a->q_scale_inv != nullptr) c.q_scale_inv = metadata_tensor(*a->q_scale_inv, DType::kI64);  // -> kQScaleShape
  c.eps = a->eps;
  c.apply_q_norm = a->apply_q_norm != 0;
  c.apply_q_rope = a->apply_q_rope != 0;
  c.q_interleaved = a->q_interleaved != 0;
  if (Status s = validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok()) return rejected(s);
  if (std::string m = first_misalignment({{{a->slot_mapping, "slot_mapping"}, 8},
                                          {{a->position_ids, "position_ids"}, 8},
                                          {{a->fp8_scale, "fp8_scale"}, 4},
                                          {{a->q_scale_inv, "q_scale_inv"}, 4}});
      !m.empty())
    return misaligned(m);

  const RecordFormat format = *format_of(c);
  const bool packed = is_packed(format);
  LegacyInsertParams p;
  p.rows = kv_rows(c, *a->kv, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache);
  p.cache = cache_target(c, *a->kv_cache, a->fp8_scale);
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
  const std::int32_t force = covers(a, KVC_END_OF(kvc_legacy_insert_args, force_grid)) ? a->force_grid : 0;
  p.grid = force == 1 ? LegacyGrid::kPerToken : force == 2 ? LegacyGrid::kLargeBatch : LegacyGrid::kAuto;
  if (p.tokens == 0 || (p.out_heads == 0 && p.rows.count == 0)) return {};
  return launch_on(c.kv.meta.device, "launching the legacy insert",
                   [&] { return kvc::kernels::legacy_insert(p, static_cast<cudaStream_t>(stream)); });
}

Outcome kv_norm(const kvc_kv_norm_args* a, void* stream) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (!covers(a, KVC_END_OF(kvc_kv_norm_args, eps)))
    return bad_argument("struct_size " + std::to_string(a->struct_size) + " does not cover kvc_kv_norm_args");
  if (std::string d = first_defect({{a->kv, "kv"}, {a->weight, "weight"}, {a->out, "out"}}); !d.empty())
    return bad_argument(d);
  const HostTensor kv = metadata_tensor(*a->kv, DType::kF32);
  const HostTensor weight = metadata_tensor(*a->weight, DType::kF32);
  if (Status s = validate_kv_norm(kv, weight, ValueAccess::kMetadataOnly); !s.ok()) return rejected(s);
  // The output is no argument of the contract's kv_norm (it returns rows); it must be kv's twin.
  const TensorMeta out = tensor_meta(*a->out, DType::kF32);
  if (!out.well_formed()) return rejected(Error(ErrorCode::kTensorMetaInvalid, "kv_norm out"));
  if (out.dtype != DType::kBF16) return rejected(Error(ErrorCode::kKvDtype, "kv_norm out must be bf16"));
  if (out.sizes != kv.meta.sizes) return rejected(Error(ErrorCode::kKvShape, "kv_norm out must have kv's shape"));
  if (!out.contiguous()) return rejected(Error(ErrorCode::kKvNotContiguous, "kv_norm out must be contiguous"));
  if (out.device != kv.meta.device)
    return rejected(Error(ErrorCode::kDeviceMismatch, "kv_norm out on device " + std::to_string(out.device)));
  if (std::string m = first_misalignment({{{a->kv, "kv"}, 2}, {{a->weight, "weight"}, 2}, {{a->out, "out"}, 2}});
      !m.empty())
    return misaligned(m);

  KvNormParams p;
  p.kv = static_cast<const std::uint16_t*>(first_element(*a->kv));
  p.out = static_cast<std::uint16_t*>(first_element(*a->out));
  p.weight = static_cast<const std::uint16_t*>(first_element(*a->weight));
  p.rows = kv.meta.size(0);
  p.eps = a->eps;
  if (p.rows == 0) return {};
  return launch_on(kv.meta.device, "launching kv_norm",
                   [&] { return kvc::kernels::kv_norm(p, static_cast<cudaStream_t>(stream)); });
}

Outcome store_rotated(const kvc_store_rotated_args* a, void* stream) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (!covers(a, KVC_END_OF(kvc_store_rotated_args, kv_mxfp8)))
    return bad_argument("struct_size " + std::to_string(a->struct_size) + " does not cover kvc_store_rotated_args");
  if (std::string d = first_defect({{a->rows, "rows"}, {a->kv_cache, "kv_cache"}, {a->indices, "indices"}}); !d.empty())
    return bad_argument(d);

  StoreCase c;
  c.rows = metadata_tensor(*a->rows, DType::kF32);        // unknown dtype -> kKvDtype
  c.indices = metadata_tensor(*a->indices, DType::kF32);  // -> kStoreIndicesInvalid
  c.cache = tensor_meta(*a->kv_cache, DType::kF32);       // -> kStoreCacheNotPacked
  c.block_size = a->block_size;
  c.kv_mxfp8 = a->kv_mxfp8 != 0;
  if (Status s = validate_store_rotated(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok())
    return rejected(s);
  const bool int32 = c.indices.meta.dtype == DType::kI32;
  if (std::string m = first_misalignment({{{a->indices, "indices"}, int32 ? 4 : 8}}); !m.empty()) return misaligned(m);

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

// Runs an entry point's body with no exception escaping into C.
template <typename Body>
int guarded(char* error, std::size_t capacity, Body&& body) {
  try {
    return finish(body(), error, capacity);
  } catch (const std::exception& e) {
    return finish(bad_argument(std::string("internal error: ") + e.what()), error, capacity);
  } catch (...) {
    return finish(bad_argument("internal error"), error, capacity);
  }
}

constexpr const char* kLibraryName = "kvconform-kernels " KVC_KERNELS_VERSION;

}  // namespace
}  // namespace kvc::kernels::abi

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  if (out == nullptr || out->struct_size < KVC_END_OF(kvc_library_info, name)) return KVC_STATUS_BAD_ARGUMENT;
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = kvc::kernels::abi::kLibraryName;
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  if (out == nullptr || out->struct_size < KVC_END_OF(kvc_op_support, reason)) return KVC_STATUS_BAD_ARGUMENT;
  // Both norms use the correctly rounded rsqrt (__frsqrt_rn): byte-exact in the default profile.
  out->q_norm_rsqrt = KVC_RSQRT_CORRECTLY_ROUNDED;
  out->kv_norm_rsqrt = KVC_RSQRT_CORRECTLY_ROUNDED;
  out->supported = 0;
  out->reason = nullptr;
  // Every op follows the contract's policies: profile vllm (written for callers of ABI 1.1+).
  if (out->struct_size >= KVC_END_OF(kvc_op_support, amax_floor)) {
    out->rope = KVC_ROPE_ROTATE;
    out->clamp_order = KVC_CLAMP_MAX_THEN_MIN;
    out->inf_block = KVC_INF_BLOCK_ZERO_INVERSE;
    out->pad_byte = KVC_PAD_BYTE_WRITTEN;
    out->scale_exponent = KVC_SCALE_EXPONENT_LOG2F;
    out->amax_floor = KVC_AMAX_FLOOR_BEFORE_DIVIDE;
  }
  const auto dtype = kvc::kernels::abi::dtype_of(kv_dtype);
  const bool bf16 = dtype == kvc::DType::kBF16;
  const bool fp16 = dtype == kvc::DType::kF16;
  const bool cache_format = format >= KVC_FORMAT_PACKED584 && format <= KVC_FORMAT_BF16_512;
  switch (op) {
    case KVC_OP_KV_ONLY_INSERT:
      if (!cache_format)
        out->reason = "unknown cache format";
      else if (!bf16)
        out->reason = "the KV-only insert takes bf16 rows only (docs/contract.md §4)";
      else
        out->supported = 1;
      break;
    case KVC_OP_LEGACY_INSERT:
      if (!cache_format)
        out->reason = "unknown cache format";
      else if (!bf16 && !fp16)
        out->reason = "the legacy insert takes bf16 or fp16 rows";
      else
        out->supported = 1;
      break;
    case KVC_OP_KV_NORM:
      if (!bf16)
        out->reason = "kv_norm takes bf16 rows only (docs/contract.md §4)";
      else
        out->supported = 1;
      break;
    case KVC_OP_STACKED_CTX_KV:  // kvc_stacked_ctx_kv (stacked_ctx_kv_abi.cpp); no cache format
      if (!bf16 && !fp16)
        out->reason = "the stacked context-KV projection takes bf16 or fp16 x";
      else
        out->supported = 1;
      break;
    case KVC_OP_STORE_ROTATED:
      if (format != KVC_FORMAT_PACKED584 && format != KVC_FORMAT_PACKED528)
        out->reason = "the store op writes packed records only (docs/contract.md §6.4)";
      else if (!bf16)
        out->reason = "the store op takes bf16 rows only (docs/contract.md §6.4)";
      else
        out->supported = 1;
      break;
    default:
      out->reason = "unknown op";
      break;
  }
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return kvc::kernels::abi::guarded(error, error_capacity,
                                    [&] { return kvc::kernels::abi::kv_only_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::kernels::abi::guarded(error, error_capacity,
                                    [&] { return kvc::kernels::abi::legacy_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return kvc::kernels::abi::guarded(error, error_capacity, [&] { return kvc::kernels::abi::kv_norm(args, stream); });
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::kernels::abi::guarded(error, error_capacity,
                                    [&] { return kvc::kernels::abi::store_rotated(args, stream); });
}

}  // extern "C"
