// kv_norm.h: standalone kv_norm (RMSNorm with a bf16 weight over [N, 512] bf16 rows), docs/contract.md §4.
//
// Output row t is f32(bf(fl(fl(e * r) * w_d))) with the lane-ordered reduction of rms_norm.h,
// stored as bf16. The fused form runs the same arithmetic in front of the KV-only insert.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/status.h"

namespace kvc::oracle {

Status kv_norm(const HostTensor& kv, const HostTensor& weight, float eps, std::vector<std::uint16_t>* out);

// One output row of a validated standalone kv_norm, with `r` replacing the correctly rounded r
// when given (an approximate-rsqrt check recomputes rows with r', docs/contract.md §2).
void kv_norm_output_row(const HostTensor& kv, const HostTensor& weight, float eps, std::int64_t row,
                        std::uint16_t* out512, std::optional<float> r = std::nullopt);

// The correctly rounded r of row `row`.
float kv_norm_row_rms_inverse(const HostTensor& kv, float eps, std::int64_t row);

}  // namespace kvc::oracle
