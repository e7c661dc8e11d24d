// store_only_sglang_geometry.cpp: a kernel library with SGLang's store kernel alone and SGLang's
// geometry (docs/contract.md §6.4), like a shim over fused_store_cache.
//
// It declares the store op for packed584 with bf16 rows and nothing else, with ABI 1.2's limits:
// page stride exactly ceil(584 * bs / 576) * 576 bytes (aligned up to 576), power-of-two block
// sizes, 2-D caches only, int32 and int64 indices, and KVC_VALIDATION_NONE (it checks nothing).
// It exports the required entry points, which answer 402, and kvc_store_rotated, which answers
// 402 to any call outside that declaration (before looking at anything else, as kvc/kernel_abi.h
// orders) and hands every other call to our kvc_store_rotated (forward_to_ours.h; ours takes 2-D
// caches). Under it the store matrix must run every case on SGLang's own cache and pass, skip the
// cases on ours naming the limit, and skip the invalid-input cells the double does not enforce:
// a suite that asserts success on our 3-D cache first, or sends it rule breakers, fails on a 402.
//
// The geometry checks below are written out on the DLTensors, not taken from kvc/abi's
// limit_breach.h: a double that shared the suite's own check could not catch a mistake in it.
#include <cstdint>
#include <cstdio>
#include <string>

#include "kvc/abi/capabilities.h"
#include "kvc/abi/op_support.h"
#include "kvc/kernel_abi.h"
#include "kvc/profile.h"
#include "testkit/doubles/forward_to_ours.h"

namespace {

constexpr const char* kName = "store_only_sglang_geometry (test double over kvconform-kernels)";
constexpr const char* kStoreOnly =
    "store_only_sglang_geometry implements SGLang's store op alone: store_rotated, packed584, bf16 rows (a test "
    "double)";
constexpr std::int64_t kSglangUnit = 576, kPacked584Record = 584;

// The declaration of the one supported combination; a static: kvc_op_support points into it.
const kvc::abi::CapabilityDeclaration& sglang_capabilities() {
  static const kvc::abi::CapabilityDeclaration d = [] {
    kvc::abi::Capabilities c;
    c.limits.page_stride = kvc::abi::PageStrideRule::kAlignedUp;
    c.limits.page_stride_align = kSglangUnit;
    c.limits.block_size = kvc::abi::BlockSizeRule::kPowerOfTwo;
    c.limits.cache_ranks = {2};
    c.limits.index_dtypes = {kvc::DType::kI32, kvc::DType::kI64};
    c.validation.scope = kvc::abi::ValidationScope::kNone;
    return kvc::abi::CapabilityDeclaration(c);
  }();
  return d;
}

bool is_type(DLDataType t, std::uint8_t code, std::uint8_t bits) {
  return t.code == code && t.bits == bits && t.lanes == 1;
}

// Why a well-formed call lies outside the declaration, or "" when it lies inside.
std::string outside_declaration(const kvc_store_rotated_args& a) {
  if (a.kv_mxfp8 != 0) return "a packed528 cache (the library declares packed584 only)";
  if (!is_type(a.rows->dtype, kDLBfloat, 16)) return "rows that are not bf16 (the library declares bf16 rows only)";
  if (!is_type(a.indices->dtype, kDLInt, 32) && !is_type(a.indices->dtype, kDLInt, 64))
    return "indices that are neither int32 nor int64";
  const DLTensor& cache = *a.kv_cache;
  if (cache.ndim != 2)
    return "a " + std::to_string(cache.ndim) + "-D cache (the library takes SGLang's 2-D cache only)";
  const std::int64_t bs = a.block_size;
  if (bs <= 0 || (bs & (bs - 1)) != 0 || bs > (std::int64_t{1} << 32))
    return "block size " + std::to_string(bs) + " (the library takes powers of two only)";
  const std::int64_t stride_elements = cache.strides != nullptr ? cache.strides[0] : cache.shape[1];
  const std::int64_t element_bytes = cache.dtype.bits >= 8 ? cache.dtype.bits / 8 : 1;
  const std::int64_t expected = (kPacked584Record * bs + kSglangUnit - 1) / kSglangUnit * kSglangUnit;
  // Compared in elements: a hostile stride times the element size could leave int64.
  if (expected % element_bytes != 0 || stride_elements != expected / element_bytes)
    return "page stride " + std::to_string(stride_elements) + " elements of " + std::to_string(element_bytes) +
           " B (the library takes exactly ceil(584 * bs / 576) * 576 = " + std::to_string(expected) + " B)";
  return "";
}

int unsupported(char* error, size_t capacity, const std::string& why) {
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", why.c_str());
  return KVC_STATUS_UNSUPPORTED;
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
  const bool store584 =
      op == KVC_OP_STORE_ROTATED && format == KVC_FORMAT_PACKED584 && is_type(kv_dtype, kDLBfloat, 16);
  out->supported = store584 ? 1 : 0;
  out->reason = store584 ? nullptr : kStoreOnly;
  out->q_norm_rsqrt = KVC_RSQRT_CORRECTLY_ROUNDED;
  out->kv_norm_rsqrt = KVC_RSQRT_CORRECTLY_ROUNDED;
  kvc::abi::declare_policies(kvc::vllm_profile(), out);  // our kernels' bytes
  if (store584) sglang_capabilities().declare(out);
  return KVC_STATUS_OK;
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args*, void*, char* error, size_t capacity) {
  return unsupported(error, capacity, kStoreOnly);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args*, void*, char* error, size_t capacity) {
  return unsupported(error, capacity, kStoreOnly);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args*, void*, char* error, size_t capacity) {
  return unsupported(error, capacity, kStoreOnly);
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error, size_t capacity) {
  // A malformed call (NULL, struct_size, a missing tensor) is ours to answer: 403.
  const bool well_formed = args != nullptr && args->struct_size >= sizeof(kvc_store_rotated_args) &&
                           args->rows != nullptr && args->indices != nullptr && args->kv_cache != nullptr;
  if (well_formed) {
    const std::string why = outside_declaration(*args);
    if (!why.empty()) return unsupported(error, capacity, "store_only_sglang_geometry does not take " + why);
  }
  return kvc::doubles::ours().kvc_store_rotated(args, stream, error, capacity);
}

}  // extern "C"
