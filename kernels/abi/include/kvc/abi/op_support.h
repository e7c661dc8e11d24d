// op_support.h: a library's kvc_op_support (kvc_op_support_get) filled in from the contract's
// vocabulary: the profile's policies (kvc/profile.h, through the ABI's policy numbers,
// enum_mapping.h) and, since 1.2, its geometry limits and validation scope (capabilities.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/abi/capabilities.h"
#include "kvc/kernel_abi.h"
#include "kvc/profile.h"

namespace kvc::abi {

// Writes the profile's policy fields (rope .. amax_floor) when out->struct_size covers them: a
// caller built against ABI 1.0 has none, and reads every library as profile vllm. The rsqrt
// fields are per norm (q_norm_rsqrt, kv_norm_rsqrt): the caller writes them (abi_rsqrt()).
void declare_policies(const Profile& p, kvc_op_support* out);

// What a library declares for one kind of answer beyond support and profile: its geometry limits
// and validation scope. kvc_op_support points into it (block_sizes, enforced_codes are "static,
// owned by the library"), so a library keeps one per kind of answer for its whole life, e.g. a
// function-local static. Default: no limits, every validation code (what our kernels declare).
class CapabilityDeclaration {
 public:
  CapabilityDeclaration() = default;
  // Throws std::invalid_argument for what kvc_op_support cannot say: a cache rank other than 2 or
  // 3, an index dtype other than int32 or int64, an alignment or a listed block size <= 0, an
  // empty block size list, a code outside 1xx/2xx, or a list longer than capabilities.h allows.
  explicit CapabilityDeclaration(Capabilities c);

  // Writes page_stride_rule .. enforced_codes, each group only when out->struct_size covers it
  // (a caller built against 1.0 or 1.1 has none of them and reads "no limits, every code").
  void declare(kvc_op_support* out) const;

  const Capabilities& capabilities() const { return c_; }

 private:
  Capabilities c_;
  std::vector<std::int32_t> codes_;  // c_.validation.enforced as ABI numbers
};

}  // namespace kvc::abi
