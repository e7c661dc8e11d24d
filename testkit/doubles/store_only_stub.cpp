// store_only_stub.cpp: a kernel library that declares the store op alone and implements nothing,
// for the runner's tests of the verdict rules (runner_cli_test without a device,
// runner_device_test with).
//
// It exports every required entry point (a library must, to load) and the optional
// kvc_store_rotated, and declares only the store op supported (packed584 and packed528, bf16 rows,
// profile vllm); every entry point answers KVC_STATUS_UNSUPPORTED and launches nothing. A run of
// the four insert suites on it compares no kernel byte: the runner must say NOTHING CHECKED, never
// PASSED (the report that asked for these rules: such a library got PASSED, exit 0). A run of the
// store suite on a device calls kvc_store_rotated, which answers 402 although the op is declared:
// a failure.
#include "kvc/kernel_abi.h"

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  out->abi_version = KVC_KERNEL_ABI_VERSION;
  out->name = "fake store-only library";
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  const bool packed = format == KVC_FORMAT_PACKED584 || format == KVC_FORMAT_PACKED528;
  const bool bf16 = kv_dtype.code == kDLBfloat && kv_dtype.bits == 16;
  out->supported = op == KVC_OP_STORE_ROTATED && packed && bf16;
  out->reason = out->supported ? nullptr : "this fake library implements the store op only";
  // No 1.2 limits or validation scope: the suite zeroes them, which declares none.
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args*, void*, char*, size_t) {
  return KVC_STATUS_UNSUPPORTED;
}
KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args*, void*, char*, size_t) {
  return KVC_STATUS_UNSUPPORTED;
}
KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args*, void*, char*, size_t) { return KVC_STATUS_UNSUPPORTED; }
KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args*, void*, char*, size_t) {
  return KVC_STATUS_UNSUPPORTED;
}

}  // extern "C"
