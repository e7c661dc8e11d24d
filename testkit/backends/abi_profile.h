// abi_profile.h: the implementation profile a kernel library declares through the ABI
// (kvc_op_support's policy fields, kvc/kernel_abi.h; docs/contract.md §6).
//
// The declaration generalizes the rsqrt one: per (op, format, kv dtype) a library says which
// alternative of each policy it follows. A library built against ABI 1.0 has no policy fields and
// declares the contract (profile vllm); so does a struct whose struct_size does not cover them.
// rsqrt comes from q_norm_rsqrt for the legacy op and from kv_norm_rsqrt for the others.
#pragma once

#include <cstdint>

#include "kvc/kernel_abi.h"
#include "kvc/profile.h"

namespace kvc::testkit {

// The first ABI version with the policy fields (1.1).
inline constexpr std::int32_t kAbiVersionWithProfiles = 1001;

// Throws std::runtime_error naming the field when a value names no alternative (a library bug:
// the suite cannot tell what to compare against).
kvc::Profile profile_from_op_support(const kvc_op_support& s, std::int32_t library_abi_version, std::int32_t op);

// The fields a library (or a test's fake) fills in to declare `p` for `op`; a struct_size too
// small for the policy fields gets only the rsqrt fields.
void declare_profile(const kvc::Profile& p, std::int32_t op, kvc_op_support* s);

}  // namespace kvc::testkit
