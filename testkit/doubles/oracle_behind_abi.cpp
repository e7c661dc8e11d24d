// oracle_behind_abi.cpp: a kernel library that is the oracle behind the kernel ABI. Each call is
// checked by the ABI's own front-end (kvc/abi: a malformed call 403, a broken metadata rule its
// code), its tensors are copied device -> host, kvc::oracle runs it under SGLang's store profile
// (`sglang-store`, docs/contract.md §6.2), and the cache is copied back: synchronous copies on
// the call's stream (so it cannot be captured in a CUDA graph). It exports the KV-only insert
// (plain and with kv_norm fused) and the store op; the legacy op and the standalone kv_norm answer
// KVC_STATUS_UNSUPPORTED, and it has no stacked entry point.
//
// Built twice (testkit/doubles/CMakeLists.txt), the two differing only in the profile they declare
// for every op (KVC_DOUBLE_DECLARES, a profile spec): `sglang-store`, honestly, and `vllm` over the
// same SGLang bytes. The GPU suites, `kvconform run` and `kvconform-fuzz --backend device` judge
// a library alike (testkit/compare/judge.h): the first passes all three, the second fails all
// three with the SGLang policies named (runner/test/judge_agreement_device_test.cpp).
//
// Like a device kernel, it skips the rows a metadata-only front-end cannot see are out of range (a
// slot or index past the cache, a live row's position outside the cos/sin table) instead of
// rejecting the call; the oracle then runs the sanitized copy at the contract level (a duplicate
// slot is the caller's race: the last row wins). Cost: the whole case through the host per call.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/insert_call.h"
#include "kvc/abi/op_support.h"
#include "kvc/abi/outcome.h"
#include "kvc/abi/store_rotated_call.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/options.h"
#include "kvc/oracle/store_rotated.h"
#include "kvc/profile.h"
#include "kvc/store_case.h"

#ifndef KVC_DOUBLE_DECLARES
#error "oracle_behind_abi.cpp needs KVC_DOUBLE_DECLARES, the profile it declares (kvc_add_abi_double DEFINES)"
#endif

namespace {

using kvc::DType;
using kvc::abi::first_element;
using kvc::abi::Outcome;

constexpr const char* kName =
    "oracle behind the ABI (kvc::oracle under sglang-store on the host), declares " KVC_DOUBLE_DECLARES;

// The profile it declares: parsed once; a spec that does not parse is a build mistake, reported on
// every call rather than declared as something else.
const std::optional<kvc::Profile>& declared() {
  static const std::optional<kvc::Profile> p = kvc::parse_profile(KVC_DOUBLE_DECLARES);
  return p;
}

kvc::oracle::OracleOptions sglang_at_the_contract_level() {
  kvc::oracle::OracleOptions o;
  o.level = kvc::ValidationLevel::kContract;
  o.profile = kvc::sglang_store_profile();
  return o;
}

Outcome from_cuda(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Outcome{}
                          : Outcome{KVC_STATUS_CUDA_ERROR, std::string(what) + ": " + cudaGetErrorString(e)};
}

// `bytes` bytes between host and device on `stream`, waited for.
Outcome copy(void* to, const void* from, std::int64_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (bytes <= 0) return {};
  if (Outcome o = from_cuda(cudaMemcpyAsync(to, from, static_cast<std::size_t>(bytes), kind, stream), "copy"); !o.ok())
    return o;
  return from_cuda(cudaStreamSynchronize(stream), "synchronise");
}

// The device bytes of the tensor `meta` describes, into `bytes` (sized `size` >= its span): from
// the 16-byte unit its first element sits in (meta.offset_bytes is the element's place in that
// unit, dlpack_metadata.h) to one past its last element.
Outcome download(const DLTensor& t, const kvc::TensorMeta& meta, std::int64_t size, std::vector<std::uint8_t>& bytes,
                 cudaStream_t stream) {
  bytes.assign(static_cast<std::size_t>(size), 0);
  if (meta.numel() == 0) return {};
  const char* unit = static_cast<const char*>(first_element(t)) - meta.offset_bytes;
  return copy(bytes.data(), unit, meta.span_bytes(), cudaMemcpyDeviceToHost, stream);
}

Outcome download(const DLTensor* t, kvc::HostTensor& h, cudaStream_t stream) {
  if (t == nullptr || !h.present) return {};
  return download(*t, h.meta, h.meta.span_bytes(), h.bytes, stream);
}

// The elements of the cache tensor back to the device (the bytes the oracle did not write go back
// as they came).
Outcome upload_cache(const DLTensor& t, const kvc::TensorMeta& meta, const std::vector<std::uint8_t>& bytes,
                     cudaStream_t stream) {
  if (meta.numel() == 0) return {};
  return copy(first_element(t), bytes.data() + meta.offset_bytes, meta.span_bytes() - meta.offset_bytes,
              cudaMemcpyHostToDevice, stream);
}

Outcome oracle_status(const kvc::Status& s) { return s.ok() ? Outcome{} : kvc::abi::rejected(s); }

Outcome kv_only_insert(const kvc_kv_only_insert_args* a, void* stream_ptr) {
  if (!declared()) return kvc::abi::bad_argument("KVC_DOUBLE_DECLARES names no profile: " KVC_DOUBLE_DECLARES);
  kvc::InsertCase c;
  if (Outcome o = kvc::abi::check_kv_only_insert(a, &c); !o.ok()) return o;
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  for (const auto& [t, h] :
       {std::make_pair(a->kv, &c.kv), std::make_pair(a->slot_mapping, &c.slots),
        std::make_pair(a->position_ids, &c.positions), std::make_pair(a->cos_sin_cache, &c.cos_sin),
        std::make_pair(a->fp8_scale, &c.fp8_scale), std::make_pair(a->kv_norm_weight, &c.kv_norm_weight)})
    if (Outcome o = download(t, *h, stream); !o.ok()) return o;
  const kvc::TensorMeta cache = kvc::abi::tensor_meta(*a->kv_cache, DType::kF32);
  kvc::InsertOutputs out;
  if (Outcome o =
          download(*a->kv_cache, cache, std::max(cache.span_bytes(), c.cache.backing_bytes()), out.cache, stream);
      !o.ok())
    return o;
  // Rows a device skips: a slot past the cache, a live row's position outside the table.
  const std::int64_t capacity = c.cache.num_blocks * c.block_size, max_pos = c.cos_sin.meta.size(0);
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t slot = c.slots.load<std::int64_t>(t), position = c.positions.load<std::int64_t>(t);
    if (slot >= capacity || (slot >= 0 && (position < 0 || position >= max_pos))) c.slots.store<std::int64_t>(t, -1);
  }
  if (Outcome o = oracle_status(kvc::oracle::kv_only_insert(c, out, sglang_at_the_contract_level())); !o.ok()) return o;
  return upload_cache(*a->kv_cache, cache, out.cache, stream);
}

Outcome store_rotated(const kvc_store_rotated_args* a, void* stream_ptr) {
  if (!declared()) return kvc::abi::bad_argument("KVC_DOUBLE_DECLARES names no profile: " KVC_DOUBLE_DECLARES);
  kvc::StoreCase c;
  if (Outcome o = kvc::abi::check_store_rotated(a, &c); !o.ok()) return o;
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  if (Outcome o = download(a->rows, c.rows, stream); !o.ok()) return o;
  if (Outcome o = download(a->indices, c.indices, stream); !o.ok()) return o;
  const kvc::CacheGeometry g = kvc::store_cache_geometry(c);
  std::vector<std::uint8_t> backing;
  if (Outcome o = download(*a->kv_cache, c.cache, std::max(c.cache.span_bytes(), g.backing_bytes()), backing, stream);
      !o.ok())
    return o;
  // Indices a device skips: past the cache.
  const std::int64_t capacity = g.num_blocks * g.block_size;
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    if (c.index(t) >= capacity) {
      if (c.indices.meta.dtype == DType::kI32)
        c.indices.store<std::int32_t>(t, -1);
      else
        c.indices.store<std::int64_t>(t, -1);
    }
  if (Outcome o = oracle_status(kvc::oracle::store_rotated(c, backing, sglang_at_the_contract_level())); !o.ok())
    return o;
  return upload_cache(*a->kv_cache, c.cache, backing, stream);
}

// What it implements: the KV-only insert (with or without the fused kv_norm) in every format and
// the store op in the packed formats, bf16 rows.
const char* unsupported_reason(int32_t op, int32_t format, DLDataType kv_dtype) {
  if (op == KVC_OP_LEGACY_INSERT || op == KVC_OP_KV_NORM || op == KVC_OP_STACKED_CTX_KV)
    return "the oracle behind the ABI implements the KV-only insert and the store op only";
  if (kvc::abi::dtype_of(kv_dtype) != DType::kBF16) return "bf16 rows only";
  const std::optional<kvc::RecordFormat> f = kvc::abi::record_format_of(format);
  if (!f) return "no such format";
  if (op == KVC_OP_STORE_ROTATED) return kvc::is_packed(*f) ? nullptr : "the store op writes the packed formats";
  if (op == KVC_OP_KV_ONLY_INSERT || op == KVC_OP_KV_ONLY_INSERT_KV_NORM) return nullptr;
  return "no such op";
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
  if (out == nullptr || !declared()) return KVC_STATUS_BAD_ARGUMENT;
  // The oracle's norms round correctly; every other policy is the declared profile's.
  out->q_norm_rsqrt = kvc::abi::abi_rsqrt(kvc::RsqrtMode::kCorrectlyRounded);
  out->kv_norm_rsqrt = kvc::abi::abi_rsqrt(kvc::RsqrtMode::kCorrectlyRounded);
  kvc::abi::declare_policies(*declared(), out);
  out->reason = unsupported_reason(op, format, kv_dtype);
  out->supported = out->reason == nullptr ? 1 : 0;
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] { return kv_only_insert(args, stream); });
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] { return store_rotated(args, stream); });
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args*, void*, char* error, size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [] {
    return Outcome{KVC_STATUS_UNSUPPORTED, "the oracle behind the ABI has no legacy insert"};
  });
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args*, void*, char* error, size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [] {
    return Outcome{KVC_STATUS_UNSUPPORTED, "the oracle behind the ABI has no standalone kv_norm"};
  });
}

}  // extern "C"
