// stacked_ctx_kv_call.h: a stacked context-KV call (kvc_stacked_ctx_kv, since 1.1) checked and
// described as the contract's StackedCtxKvCase, the same way in every implementation of the ABI:
//   1. a malformed call -> KVC_STATUS_BAD_ARGUMENT: args NULL, struct_size or layer_struct_size
//      too small (or a layer entry of another size than this build's: the array could not be
//      walked), layers NULL, path or gemm no value of its enum, a tensor with a structural defect
//      (the optional ones when present);
//   2. the metadata as a StackedCtxKvCase (a dtype the contract does not know becomes one its
//      tensor's rule rejects);
//   3. kvc::validate_stacked_ctx_kv at the strict level, metadata only -> the broken rule's code.
// Choosing the path (eligibility, the stacked parameters) is the implementation's next step.
#pragma once

#include "kvc/abi/outcome.h"
#include "kvc/kernel_abi.h"
#include "kvc/stacked_ctx_kv_case.h"

namespace kvc::abi {

// commit_lens when the caller's struct_size covers the field (since 1.3), else NULL: a caller
// built against 1.2 has no prefix-valid writes.
const DLTensor* stacked_commit_lens(const kvc_stacked_ctx_kv_args& a);

// OK with *c the call's case, or the outcome that rejects the call (*c then unspecified).
Outcome check_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* a, StackedCtxKvCase* c);

}  // namespace kvc::abi
