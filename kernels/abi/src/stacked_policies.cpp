// stacked_policies.cpp: kvc_op_support's 1.3 stacked policy fields <-> StackedProfile (see
// stacked_policies.h).
#include "kvc/abi/stacked_policies.h"

#include <string>

#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/struct_size.h"

namespace kvc::abi {
namespace {

constexpr std::size_t kEndOfStackedPolicies = KVC_ABI_END_OF(kvc_op_support, cache_loc);

// The alternative a field names, checked against the policy's count (enum_mapping.h ties the
// numbers to StackedProfile's).
int alternative(std::int32_t value, StackedPolicy policy, const char* field) {
  const int count = alternatives_of(policy);
  if (value < 0 || value >= count)
    throw CapabilityError(std::string("kvc_op_support.") + field + " = " + std::to_string(value) +
                          " names no alternative (0.." + std::to_string(count - 1) + ", kvc/kernel_abi.h)");
  return value;
}

}  // namespace

StackedProfile read_stacked_profile(const kvc_op_support& s, std::int32_t library_abi_version) {
  StackedProfile p = contract_stacked_profile();
  if (library_abi_version < kAbiVersionWithStackedPolicies || s.struct_size < kEndOfStackedPolicies) return p;
  p = with_alternative(p, StackedPolicy::kRope, alternative(s.stacked_rope, StackedPolicy::kRope, "stacked_rope"));
  p = with_alternative(p, StackedPolicy::kReduction,
                       alternative(s.k_norm_reduction, StackedPolicy::kReduction, "k_norm_reduction"));
  p = with_alternative(p, StackedPolicy::kReciprocal,
                       alternative(s.k_norm_reciprocal, StackedPolicy::kReciprocal, "k_norm_reciprocal"));
  p = with_alternative(p, StackedPolicy::kCacheLoc, alternative(s.cache_loc, StackedPolicy::kCacheLoc, "cache_loc"));
  return p;
}

void declare_stacked_policies(const StackedProfile& p, kvc_op_support* out) {
  if (out->struct_size < kEndOfStackedPolicies) return;
  out->stacked_rope = abi_policy(p.rope);
  out->k_norm_reduction = abi_policy(p.reduction);
  out->k_norm_reciprocal = abi_policy(p.reciprocal);
  out->cache_loc = abi_policy(p.cache_loc);
}

}  // namespace kvc::abi
