// kv_norm.cpp: standalone kv_norm (see kv_norm.h).
#include "kvc/oracle/kv_norm.h"

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/validate.h"

namespace kvc::oracle {

Status kv_norm(const HostTensor& kv, const HostTensor& weight, float eps, std::vector<std::uint16_t>* out) {
  if (Status s = validate_kv_norm(kv, weight); !s.ok()) return s;
  const std::int64_t rows = kv.meta.size(0);
  std::uint16_t w[kHeadDim];
  for (int d = 0; d < kHeadDim; ++d) w[d] = weight.load<std::uint16_t>(d);
  out->assign(static_cast<std::size_t>(rows * kHeadDim), 0);
  float e[kHeadDim];
  for (std::int64_t t = 0; t < rows; ++t) {
    for (int d = 0; d < kHeadDim; ++d) e[d] = bf16_to_float(kv.load<std::uint16_t>(t * kHeadDim + d));
    kv_norm_row(e, w, eps);
    for (int d = 0; d < kHeadDim; ++d) (*out)[static_cast<std::size_t>(t * kHeadDim + d)] = float_to_bf16(e[d]);
  }
  return Status::Ok();
}

}  // namespace kvc::oracle
