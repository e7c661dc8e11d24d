// stacked_policies.h: kvc_op_support's stacked policy fields (since ABI 1.3: stacked_rope,
// k_norm_reduction, k_norm_reciprocal, cache_loc) <-> the contract's kvc::StackedProfile
// (docs/contract.md §6.2.1, §6.5).
//
// A library declares them for KVC_OP_STACKED_CTX_KV (its per-layer and stacked paths) and for
// KVC_OP_STACKED_CTX_KV_FUSED (its fused path), because a real library's fused path has another
// profile than its other paths. The suite reads them to judge each run under the policies of the
// path it took. A library built against 1.2 or earlier, or a struct_size that stops before the
// fields, declares the contract for op 4 and has no fused path (op 6 unsupported, with the reason
// kNoFusedPathBefore13).
#pragma once

#include <cstdint>

#include "kvc/abi/capabilities.h"
#include "kvc/kernel_abi.h"
#include "kvc/stacked_profile.h"

namespace kvc::abi {

// The first ABI version with the stacked policy fields and the fused path's query: 1.3.
inline constexpr std::int32_t kAbiVersionWithStackedPolicies = 1003;

// The reason op 6 is unsupported for a library built before 1.3 (the suite does not ask it).
inline constexpr const char* kNoFusedPathBefore13 = "built against ABI 1.x: no fused stacked path";

// Whether `op` carries stacked policies (ops 4 and 6).
constexpr bool has_stacked_policies(std::int32_t op) {
  return op == KVC_OP_STACKED_CTX_KV || op == KVC_OP_STACKED_CTX_KV_FUSED;
}

// The stacked profile a supported answer declares: the contract's for a library older than 1.3 or
// a struct_size that does not cover the four fields, else the fields decoded. Throws
// CapabilityError naming the field for a value no alternative has (a library bug: the suite cannot
// tell what to compare against).
StackedProfile read_stacked_profile(const kvc_op_support& s, std::int32_t library_abi_version);

// Writes the four fields when out->struct_size covers them (a caller built before 1.3 has none,
// and reads the contract).
void declare_stacked_policies(const StackedProfile& p, kvc_op_support* out);

}  // namespace kvc::abi
