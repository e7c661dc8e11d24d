// unvalidated_insert_exports.h: the exports of a double that runs our kernels, declares that its
// insert ops validate nothing (KVC_VALIDATION_NONE), and plants one thing after each accepted
// insert call. The double defines, before this macro,
//   int kvc::doubles::plant_after_insert(const Args& a, void* stream, char* error, size_t n)
// for Args = kvc_kv_only_insert_args and kvc_legacy_insert_args (a template: both name the cache,
// slot_mapping, position_ids, cos_sin_cache, block_size and kv_mxfp8 alike), returning the status
// to give back. Every other entry point is ours. Used by writes_past_end and
// reads_outside_cos_sin, which differ only in what they plant.
#pragma once

#include <cstddef>

#include "kvc/abi/struct_size.h"
#include "testkit/doubles/forward_to_ours.h"

#define KVC_DOUBLE_UNVALIDATED_INSERT_EXPORTS(library_name)                                                          \
  extern "C" {                                                                                                       \
  KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {                                                   \
    if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_library_info, name)) return KVC_STATUS_BAD_ARGUMENT; \
    out->abi_version = KVC_KERNEL_ABI_VERSION;                                                                       \
    out->name = library_name;                                                                                        \
    return KVC_STATUS_OK;                                                                                            \
  }                                                                                                                  \
  KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {      \
    const int rc = ::kvc::doubles::ours().kvc_op_support_get(op, format, kv_dtype, out);                             \
    const bool insert =                                                                                              \
        op == KVC_OP_KV_ONLY_INSERT || op == KVC_OP_LEGACY_INSERT || op == KVC_OP_KV_ONLY_INSERT_KV_NORM;            \
    if (rc == KVC_STATUS_OK && insert && out->struct_size >= KVC_ABI_END_OF(kvc_op_support, validation))             \
      out->validation = KVC_VALIDATION_NONE;                                                                         \
    return rc;                                                                                                       \
  }                                                                                                                  \
  KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* a, void* stream, char* error, size_t n) {     \
    const int rc = ::kvc::doubles::ours().kvc_kv_only_insert(a, stream, error, n);                                   \
    return rc != KVC_STATUS_OK ? rc : ::kvc::doubles::plant_after_insert(*a, stream, error, n);                      \
  }                                                                                                                  \
  KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* a, void* stream, char* error, size_t n) {       \
    const int rc = ::kvc::doubles::ours().kvc_legacy_insert(a, stream, error, n);                                    \
    return rc != KVC_STATUS_OK ? rc : ::kvc::doubles::plant_after_insert(*a, stream, error, n);                      \
  }                                                                                                                  \
  KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* a, void* stream, char* error, size_t n) {                   \
    return ::kvc::doubles::ours().kvc_kv_norm(a, stream, error, n);                                                  \
  }                                                                                                                  \
  KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* a, void* stream, char* error, size_t n) {       \
    return ::kvc::doubles::ours().kvc_store_rotated(a, stream, error, n);                                            \
  }                                                                                                                  \
  KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* a, void* stream, char* error, size_t n) {     \
    return ::kvc::doubles::ours().kvc_stacked_ctx_kv(a, stream, error, n);                                           \
  }                                                                                                                  \
  } /* extern "C" */
