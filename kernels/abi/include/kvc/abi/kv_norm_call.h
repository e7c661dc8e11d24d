// kv_norm_call.h: a standalone kv_norm call checked and described in the contract's vocabulary,
// the same way in every implementation of the ABI: a malformed call -> KVC_STATUS_BAD_ARGUMENT
// (args NULL, struct_size, a structural defect); kv and weight -> kvc::validate_kv_norm, metadata
// only; out, which is no argument of the contract's kv_norm (it returns rows), must be kv's twin,
// each broken property answering the code of the kv rule it breaks.
#pragma once

#include "kvc/abi/outcome.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"

namespace kvc::abi {

struct KvNormCall {
  HostTensor kv;      // [N, 512] bf16, metadata only
  HostTensor weight;  // [512] bf16, metadata only
  TensorMeta out;     // kv's shape, bf16, contiguous, kv's device
};

// OK with *call described, or the outcome that rejects the call (*call then unspecified).
Outcome check_kv_norm(const kvc_kv_norm_args* a, KvNormCall* call);

}  // namespace kvc::abi
