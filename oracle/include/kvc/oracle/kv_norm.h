// kv_norm.h: standalone kv_norm (RMSNorm with a bf16 weight over [N, 512] bf16 rows), SPEC.md §4.
//
// Output row t is f32(bf(fl(fl(e * r) * w_d))) with the lane-ordered reduction of rms_norm.h,
// stored as bf16. The fused form runs the same arithmetic in front of the KV-only insert.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/status.h"

namespace kvc::oracle {

Status kv_norm(const HostTensor& kv, const HostTensor& weight, float eps, std::vector<std::uint16_t>* out);

}  // namespace kvc::oracle
