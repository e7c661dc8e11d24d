// supports_nothing.cpp: a kernel library that loads and implements nothing, for
// kernel_library_test and device_backend_test.
//
// Built three times (testkit/doubles/CMakeLists.txt): supports_nothing, plain (loads, and declares
// every op unsupported with a reason the suite must pass on); abi_major2, with KVC_FAKE_ABI_VERSION
// (another ABI major: the suite must refuse it, naming both versions); missing_kv_norm, with
// KVC_FAKE_OMIT_KV_NORM (one ABI symbol missing: the suite must name it).
// The ops launch nothing; they are never meant to be called.
#include "kvc/kernel_abi.h"

#ifndef KVC_FAKE_ABI_VERSION
#define KVC_FAKE_ABI_VERSION KVC_KERNEL_ABI_VERSION
#endif

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  out->abi_version = KVC_FAKE_ABI_VERSION;
  out->name = "fake kernel library";
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t, int32_t, DLDataType, kvc_op_support* out) {
  out->supported = 0;
  out->reason = "a fake library implements nothing";
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args*, void*, char*, size_t) {
  return KVC_STATUS_UNSUPPORTED;
}
KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args*, void*, char*, size_t) {
  return KVC_STATUS_UNSUPPORTED;
}

#ifndef KVC_FAKE_OMIT_KV_NORM
KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args*, void*, char*, size_t) { return KVC_STATUS_UNSUPPORTED; }
#endif

}  // extern "C"
