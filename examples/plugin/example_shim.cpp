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
//   2. Per call: checks it with the ABI's argument front-end (kvc::kernel_abi_args, CPU only, the
//      checks kvconform's own wrapper runs): a malformed call (NULL, struct_size too small,
//      non-CUDA tensor) answers KVC_STATUS_BAD_ARGUMENT; the DLPack tensors become the contract's
//      metadata, validated with the contract's own rules (kvc::validate_insert, metadata only),
//      and a broken rule answers its stable code; nothing is launched for a rejected call.
//   3. Unpacks pointers (data + byte_offset) into the native call and enqueues it on the caller's
//      stream, without synchronising; a launch error becomes KVC_STATUS_CUDA_ERROR.
// No exception crosses the C boundary (kvc::abi::answer). Built only when CUDA is enabled;
// `ctest -L gpu` with KVC_KERNELS=<build>/examples/plugin/libkvc_example_shim.so runs the suite
// against it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/insert_call.h"
#include "kvc/abi/kv_norm_call.h"
#include "kvc/abi/outcome.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/kernels/kv_insert.h"
#include "kvc/kernels/kv_norm.h"

namespace {

using kvc::DType;
using kvc::abi::first_element;
using kvc::abi::Outcome;

constexpr const char* kName = "kvconform example shim (KV-only insert and kv_norm over the kvconform kernel host API)";

Outcome from_cuda(cudaError_t e) {
  return e == cudaSuccess ? Outcome{} : Outcome{KVC_STATUS_CUDA_ERROR, std::string("launch: ") + cudaGetErrorString(e)};
}

Outcome kv_only_insert(const kvc_kv_only_insert_args* a, void* stream) {
  // The contract's view of the call, validated with the contract's rules (metadata only: the
  // slot and position values live on the device; the kernels skip out-of-range ones there).
  kvc::InsertCase c;
  if (Outcome o = kvc::abi::check_kv_only_insert(a, &c); !o.ok()) return o;

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
  // kv and weight validated with the contract's rule; out must be kv's twin.
  kvc::abi::KvNormCall call;
  if (Outcome o = kvc::abi::check_kv_norm(a, &call); !o.ok()) return o;

  kvc::kernels::KvNormParams p;
  p.kv = static_cast<const std::uint16_t*>(first_element(*a->kv));
  p.out = static_cast<std::uint16_t*>(first_element(*a->out));
  p.weight = static_cast<const std::uint16_t*>(first_element(*a->weight));
  p.rows = call.kv.meta.size(0);
  p.eps = a->eps;
  if (p.rows == 0) return {};
  return from_cuda(kvc::kernels::kv_norm(p, static_cast<cudaStream_t>(stream)));
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
  out->q_norm_rsqrt = kvc::abi::abi_rsqrt(kvc::RsqrtMode::kCorrectlyRounded);
  out->kv_norm_rsqrt = kvc::abi::abi_rsqrt(kvc::RsqrtMode::kCorrectlyRounded);
  out->supported = 0;
  out->reason = nullptr;
  const bool bf16 = kvc::abi::dtype_of(kv_dtype) == DType::kBF16;
  if (op == KVC_OP_LEGACY_INSERT) {
    out->reason = "the example shim implements the KV-only insert and kv_norm only";
  } else if (!bf16) {
    out->reason = "bf16 rows only";
  } else if (op == KVC_OP_KV_NORM || ((op == KVC_OP_KV_ONLY_INSERT || op == KVC_OP_KV_ONLY_INSERT_KV_NORM) &&
                                      kvc::abi::record_format_of(format).has_value())) {
    // The KV-only insert with and without kv_norm in front (ABI 1.2 asks for each: op 5 is the fused one).
    out->supported = 1;
  } else {
    out->reason = "unknown op or format";
  }
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] { return kv_only_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args*, void*, char* error, size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [] {
    return Outcome{KVC_STATUS_UNSUPPORTED, "the example shim has no legacy insert"};
  });
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] { return kv_norm(args, stream); });
}

}  // extern "C"
