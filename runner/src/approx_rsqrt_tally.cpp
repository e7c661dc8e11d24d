// approx_rsqrt_tally.cpp: see approx_rsqrt_tally.h.
#include "approx_rsqrt_tally.h"

#include <algorithm>
#include <cstdlib>

namespace kvc::runner {

void ApproxRsqrtTally::add(const testkit::ApproxRsqrtResult& result) {
  if (result.mode != RsqrtMode::kApproximate) return;
  rows_checked += result.norm_rows;
  rows_moved += static_cast<std::int64_t>(result.moved.size());
  for (const testkit::RowOffset& m : result.moved) max_ulps = std::max(max_ulps, std::abs(m.ulps));
}

void ApproxRsqrtTally::merge(const ApproxRsqrtTally& other) {
  rows_checked += other.rows_checked;
  rows_moved += other.rows_moved;
  max_ulps = std::max(max_ulps, other.max_ulps);
}

std::string ApproxRsqrtTally::line() const {
  return std::to_string(rows_checked) + " norm rows checked under the declared approximate rsqrt, " +
         std::to_string(rows_moved) + " needed r' != r, max |r' - r| = " + std::to_string(max_ulps) +
         (max_ulps == 1 ? " ulp" : " ulps");
}

}  // namespace kvc::runner
