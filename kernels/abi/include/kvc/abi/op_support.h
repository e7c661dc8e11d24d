// op_support.h: a library's kvc_op_support (kvc_op_support_get) filled in from the contract's
// profile vocabulary (kvc/profile.h), through the ABI's policy numbers (enum_mapping.h).
#pragma once

#include "kvc/kernel_abi.h"
#include "kvc/profile.h"

namespace kvc::abi {

// Writes the profile's policy fields (rope .. amax_floor) when out->struct_size covers them: a
// caller built against ABI 1.0 has none, and reads every library as profile vllm. The rsqrt
// fields are per norm (q_norm_rsqrt, kv_norm_rsqrt): the caller writes them (abi_rsqrt()).
void declare_policies(const Profile& p, kvc_op_support* out);

}  // namespace kvc::abi
