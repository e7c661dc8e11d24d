// plain_insert_only.cpp: a kernel library that binds the plain KV-only insert but not the one with
// kv_norm fused in front, like a shim over vLLM's fused_deepseek_v4_kv_rope_insert alone.
//
// It declares KVC_OP_KV_ONLY_INSERT_KV_NORM unsupported, with a reason, and answers 402 to a
// kvc_kv_only_insert call with kv_norm_weight set; every other declaration and call is our
// kernels' (forward_to_ours.h). Under it every fused case (FusedKvNorm, GraphReplay and
// DefaultStreamHeldOps KvOnlyKvNorm, the golden kv_only.<fmt>.kv_norm fixtures, the runner's
// fused_kv_norm suite) must be skipped with that reason, and everything else must pass: a suite
// that asks the plain insert's declaration for a fused case calls the library and fails on the 402.
//
// Built twice more (testkit/doubles/CMakeLists.txt):
//  - plain_insert_dense_pages (KVC_DOUBLE_DENSE_PAGES): the plain KV-only insert also declares
//    ABI 1.2 geometry limits, dense pages (page stride exactly bs * record bytes) and block sizes
//    16 and 64 only, and answers 402 to a call outside them; every matrix case with padded pages
//    or block size 256 must be skipped naming the limit, the rest must pass.
//  - plain_insert_only_abi11 (KVC_DOUBLE_ABI_VERSION=1001): the same library saying it was built
//    against ABI 1.1, which has no fused kv_norm query: the suite must ask it the plain insert's
//    declaration for a fused case (and, on a device, fail that case on the 402: what 1.2 fixed).
#include <cstdint>
#include <cstdio>

#include "kvc/abi/struct_size.h"
#include "kvc/kernel_abi.h"
#include "testkit/doubles/forward_to_ours.h"

#ifndef KVC_DOUBLE_DENSE_PAGES
#define KVC_DOUBLE_DENSE_PAGES 0
#endif

namespace {

constexpr const char* kNoFusedKvNorm =
    "plain_insert_only binds the plain KV-only insert only: no kv_norm fused in front (a test double)";

int unsupported(char* error, size_t capacity, const char* why) {
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", why);
  return KVC_STATUS_UNSUPPORTED;
}

#if KVC_DOUBLE_DENSE_PAGES
constexpr std::int64_t kDeclaredBlockSizes[] = {16, 64};

// Record bytes of the call's cache format: the uint8 packed records, or a full-cache row.
std::int64_t record_bytes(const kvc_kv_only_insert_args& a) {
  if (a.kv_cache->dtype.code == kDLUInt && a.kv_cache->dtype.bits == 8) return a.kv_mxfp8 != 0 ? 528 : 584;
  return 512 * ((a.kv_cache->dtype.bits + 7) / 8);  // e4m3: 512 B, bf16: 1024 B
}

// Whether a well-formed call lies inside the declared geometry: a listed block size, and a page
// stride of exactly bs * record bytes (compared in elements, so no product can leave int64).
bool inside_dense_pages(const kvc_kv_only_insert_args& a) {
  bool listed = false;
  for (std::int64_t bs : kDeclaredBlockSizes) listed = listed || a.block_size == bs;
  if (!listed || a.kv_cache->ndim != 3) return false;
  const std::int64_t element_bytes = a.kv_cache->dtype.bits >= 8 ? a.kv_cache->dtype.bits / 8 : 1;
  const std::int64_t stride0 =
      a.kv_cache->strides != nullptr ? a.kv_cache->strides[0] : a.kv_cache->shape[1] * a.kv_cache->shape[2];
  return stride0 * element_bytes == a.block_size * record_bytes(a);
}
#endif

}  // namespace

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  const int rc = kvc::doubles::ours().kvc_library_info_get(out);
  if (rc != KVC_STATUS_OK) return rc;
  out->name = KVC_DOUBLE_DENSE_PAGES ? "plain_insert_dense_pages (test double over kvconform-kernels)"
                                     : "plain_insert_only (test double over kvconform-kernels)";
#ifdef KVC_DOUBLE_ABI_VERSION
  out->abi_version = KVC_DOUBLE_ABI_VERSION;
#endif
  return rc;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  const int rc = kvc::doubles::ours().kvc_op_support_get(op, format, kv_dtype, out);
  if (rc == KVC_STATUS_OK && op == KVC_OP_KV_ONLY_INSERT_KV_NORM) {
    out->supported = 0;
    out->reason = kNoFusedKvNorm;
  }
#if KVC_DOUBLE_DENSE_PAGES
  if (rc == KVC_STATUS_OK && op == KVC_OP_KV_ONLY_INSERT && out->supported &&
      out->struct_size >= KVC_ABI_END_OF(kvc_op_support, block_sizes)) {
    out->page_stride_rule = KVC_PAGE_STRIDE_DENSE;
    out->block_size_rule = KVC_BLOCK_SIZE_LISTED;
    out->block_size_count = static_cast<int32_t>(sizeof kDeclaredBlockSizes / sizeof kDeclaredBlockSizes[0]);
    out->block_sizes = kDeclaredBlockSizes;
  }
#endif
  return rc;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  const bool well_formed = args != nullptr && args->struct_size >= sizeof(kvc_kv_only_insert_args);
  if (well_formed && args->kv_norm_weight != nullptr) return unsupported(error, error_capacity, kNoFusedKvNorm);
#if KVC_DOUBLE_DENSE_PAGES
  if (well_formed && args->kv_cache != nullptr && !inside_dense_pages(*args))
    return unsupported(error, error_capacity,
                       "plain_insert_dense_pages takes dense pages of 16 or 64 tokens only (a test double)");
#endif
  return kvc::doubles::ours().kvc_kv_only_insert(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::doubles::ours().kvc_legacy_insert(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return kvc::doubles::ours().kvc_kv_norm(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::doubles::ours().kvc_store_rotated(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return kvc::doubles::ours().kvc_stacked_ctx_kv(args, stream, error, error_capacity);
}

}  // extern "C"
