// approx_rsqrt_tally.h: what the approximate-rsqrt mode granted over a run.
//
// A library that declares the approximate rsqrt (kvc/kernel_abi.h, kvc_rsqrt_mode) passes a norm
// row when its bytes equal the oracle's for some r' within 2 fp32 ulps of the correctly rounded r
// (testkit/compare/approx_rsqrt.h). A passing run says how much of that freedom it used: how many
// rows were checked that way, how many needed r' != r, and the largest |r' - r|, so that "passed"
// never hides a kernel that leans on the window everywhere.
#pragma once

#include <cstdint>
#include <string>

#include "testkit/compare/approx_rsqrt.h"

namespace kvc::runner {

struct ApproxRsqrtTally {
  std::int64_t rows_checked = 0;  // norm rows judged under the approximate mode
  std::int64_t rows_moved = 0;    // of them, reproduced only with r' != r
  int max_ulps = 0;               // the largest |r' - r| among them, in fp32 ulps

  bool empty() const { return rows_checked == 0; }
  // Adds one comparison (nothing under the correctly rounded mode: it has no rows to grant).
  void add(const testkit::ApproxRsqrtResult& result);
  void merge(const ApproxRsqrtTally& other);
  // "1024 norm rows checked under the declared approximate rsqrt, 17 needed r' != r, max |r' - r| = 1 ulp"
  std::string line() const;
};

}  // namespace kvc::runner
