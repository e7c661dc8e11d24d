// quantize.h: the e4m3 code of one scaled value as the options say (docs/contract.md §2.2, §6.1).
//
// Every e4m3 code of a KV record goes through quantize(): the clamp in the profile's order, then
// the satfinite round-to-nearest-even encoder; or, under the ties-away mutation (options.h), the
// deliberately defective rounding the mutation tests must catch.
#pragma once

#include <cstdint>

#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/options.h"

namespace kvc::oracle {

// e4m3 with exact midpoints rounded away from zero instead of to even (the kTiesAwayFromZero
// mutant); every other value as e4m3_encode(v, order).
std::uint8_t e4m3_ties_away(float v, ClampOrder order);

inline std::uint8_t quantize(float scaled, const OracleOptions& o) {
  return o.mutation == OracleMutation::kTiesAwayFromZero ? e4m3_ties_away(scaled, o.profile.clamp_order)
                                                         : e4m3_encode(scaled, o.profile.clamp_order);
}

}  // namespace kvc::oracle
