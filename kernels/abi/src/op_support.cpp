// op_support.cpp: kvc_op_support's policy fields from a Profile (see op_support.h).
#include "kvc/abi/op_support.h"

#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/struct_size.h"

namespace kvc::abi {

void declare_policies(const Profile& p, kvc_op_support* out) {
  if (out->struct_size < KVC_ABI_END_OF(kvc_op_support, amax_floor)) return;
  out->rope = abi_policy(p.rope);
  out->clamp_order = abi_policy(p.clamp_order);
  out->inf_block = abi_policy(p.inf_block);
  out->pad_byte = abi_policy(p.pad_byte);
  out->scale_exponent = abi_policy(p.exponent);
  out->amax_floor = abi_policy(p.amax_floor);
}

}  // namespace kvc::abi
