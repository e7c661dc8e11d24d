// abi_profile.cpp: kvc_op_support's policy fields <-> kvc::Profile (see abi_profile.h).
#include "testkit/backends/abi_profile.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace kvc::testkit {
namespace {

constexpr std::size_t kEndOfPolicies = offsetof(kvc_op_support, amax_floor) + sizeof(std::int32_t);

int alternative(std::int32_t value, const char* field) {
  if (value != 0 && value != 1)
    throw std::runtime_error(std::string("kvc_op_support.") + field + " = " + std::to_string(value) +
                             " names no alternative (0 or 1, kvc/kernel_abi.h)");
  return value;
}

}  // namespace

kvc::Profile profile_from_op_support(const kvc_op_support& s, std::int32_t library_abi_version, std::int32_t op) {
  using kvc::Policy;
  kvc::Profile p = kvc::vllm_profile();
  const std::int32_t rsqrt = op == KVC_OP_LEGACY_INSERT ? s.q_norm_rsqrt : s.kv_norm_rsqrt;
  p = kvc::with_alternative(p, Policy::kRsqrt, alternative(rsqrt, "rsqrt"));
  if (library_abi_version < kAbiVersionWithProfiles || s.struct_size < kEndOfPolicies) return p;
  p = kvc::with_alternative(p, Policy::kRope, alternative(s.rope, "rope"));
  p = kvc::with_alternative(p, Policy::kClampOrder, alternative(s.clamp_order, "clamp_order"));
  p = kvc::with_alternative(p, Policy::kInfBlock, alternative(s.inf_block, "inf_block"));
  p = kvc::with_alternative(p, Policy::kPadByte, alternative(s.pad_byte, "pad_byte"));
  p = kvc::with_alternative(p, Policy::kExponent, alternative(s.scale_exponent, "scale_exponent"));
  p = kvc::with_alternative(p, Policy::kFloorPlacement, alternative(s.amax_floor, "amax_floor"));
  return p;
}

void declare_profile(const kvc::Profile& p, std::int32_t op, kvc_op_support* s) {
  using kvc::Policy;
  const std::int32_t rsqrt = kvc::alternative_of(p, Policy::kRsqrt);
  if (op == KVC_OP_LEGACY_INSERT)
    s->q_norm_rsqrt = rsqrt;
  else
    s->kv_norm_rsqrt = rsqrt;
  if (s->struct_size < kEndOfPolicies) return;
  s->rope = kvc::alternative_of(p, Policy::kRope);
  s->clamp_order = kvc::alternative_of(p, Policy::kClampOrder);
  s->inf_block = kvc::alternative_of(p, Policy::kInfBlock);
  s->pad_byte = kvc::alternative_of(p, Policy::kPadByte);
  s->scale_exponent = kvc::alternative_of(p, Policy::kExponent);
  s->amax_floor = kvc::alternative_of(p, Policy::kFloorPlacement);
}

}  // namespace kvc::testkit
