// kv_norm.cpp: standalone kv_norm (see kv_norm.h).
#include "kvc/oracle/kv_norm.h"

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/validate.h"

namespace kvc::oracle {
namespace {

void load_row(const HostTensor& kv, std::int64_t row, float* e) {
  for (int d = 0; d < kHeadDim; ++d) e[d] = bf16_to_float(kv.load<std::uint16_t>(row * kHeadDim + d));
}

}  // namespace

float kv_norm_row_rms_inverse(const HostTensor& kv, float eps, std::int64_t row) {
  float e[kHeadDim];
  load_row(kv, row, e);
  return row_rms_inverse(e, eps);
}

void kv_norm_output_row(const HostTensor& kv, const HostTensor& weight, float eps, std::int64_t row,
                        std::uint16_t* out512, std::optional<float> r) {
  std::uint16_t w[kHeadDim];
  for (int d = 0; d < kHeadDim; ++d) w[d] = weight.load<std::uint16_t>(d);
  float e[kHeadDim];
  load_row(kv, row, e);
  kv_norm_row_with_inverse(e, w, r ? *r : row_rms_inverse(e, eps));
  for (int d = 0; d < kHeadDim; ++d) out512[d] = float_to_bf16(e[d]);
}

Status kv_norm(const HostTensor& kv, const HostTensor& weight, float eps, std::vector<std::uint16_t>* out) {
  if (Status s = validate_kv_norm(kv, weight); !s.ok()) return s;
  const std::int64_t rows = kv.meta.size(0);
  out->assign(static_cast<std::size_t>(rows * kHeadDim), 0);
  for (std::int64_t t = 0; t < rows; ++t) kv_norm_output_row(kv, weight, eps, t, out->data() + t * kHeadDim);
  return Status::Ok();
}

}  // namespace kvc::oracle
