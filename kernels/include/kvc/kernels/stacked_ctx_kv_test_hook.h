/* stacked_ctx_kv_test_hook.h: TEST-ONLY. Not part of the kernel ABI (kvc/kernel_abi.h), no
 * stability promise, and never looked up by the suite itself.
 *
 * Our library's ABI entry point kvc_stacked_ctx_kv runs the contract's stacked profile (the exact
 * order it declares). Our epilogue implements every alternative of every stacked policy
 * (docs/contract.md §6.2.1); this one extra exported symbol runs the op under the given ones, so
 * that test doubles (testkit/doubles/stacked_policy.cpp) can be libraries that declare and follow
 * another profile around kernels known to be right. Arguments are kvc_stacked_ctx_kv's, then the
 * four policies as their kvc_op_support numbers (kvc_stacked_rope, kvc_k_norm_reduction,
 * kvc_k_norm_reciprocal, kvc_cache_loc_policy); a number no alternative has is
 * KVC_STATUS_BAD_ARGUMENT. KVC_K_NORM_UNSPECIFIED sums as the lane tree.
 *
 * Under KVC_CACHE_LOC_SLOT0_RESERVED the call copies cache_loc to the host and synchronises the
 * stream to reject a negative entry with 159 before anything is launched: it is not capturable in
 * a CUDA graph (a test-only cost; the device skips such a token too). */
#ifndef KVC_KERNELS_STACKED_CTX_KV_TEST_HOOK_H_
#define KVC_KERNELS_STACKED_CTX_KV_TEST_HOOK_H_

#include "kvc/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVC_TEST_STACKED_HOOK_SYMBOL "kvc_test_stacked_ctx_kv_with_policies"

KVC_ABI_EXPORT int kvc_test_stacked_ctx_kv_with_policies(const kvc_stacked_ctx_kv_args* args, void* stream,
                                                         int32_t stacked_rope, int32_t k_norm_reduction,
                                                         int32_t k_norm_reciprocal, int32_t cache_loc, char* error,
                                                         size_t error_capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVC_KERNELS_STACKED_CTX_KV_TEST_HOOK_H_ */
