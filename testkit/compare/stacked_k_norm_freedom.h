// stacked_k_norm_freedom.h: what the stacked op's declared K-norm policies leave free, and the
// heads of a library's K pools that this freedom accounts for (docs/contract.md §6.2.1).
//
// Given r, the K epilogue is fixed by the declaration (stacked_ctx_kv_k_norm.h), so both
// policies that do not fix the bytes act on r alone:
//   - an approximate reciprocal (with a declared reduction order): as §2.5 does for the
//     approximate rsqrt, a head passes if some r' within kApproxReciprocalMaxUlps fp32 ulps of
//     the correctly rounded r reproduces its hd stored K values exactly; the report gives r';
//   - an unspecified reduction: S in any order lies within gamma_hd * S of the exact sum (every
//     term is >= 0), the mean and eps add at most three roundings, so r lies in an interval
//     [r_lo, r_hi] (widened by the approximate reciprocal's ulps when that is declared too). The
//     stored normed value is monotone in r and each rotated output is monotone in each of its two
//     inputs, so evaluating the declared pipeline at the interval's ends (the normed K) and at
//     the four corners of each pair's box (the rotated K) gives each element's exact range: its
//     per-element budget, printed in ulps of D with the heads that needed it.
// A tolerance on the outputs alone would be wrong in both directions (§2.5: one ulp of r can be
// several ulps after RoPE's cancellation, and most elements cannot move at all); these budgets
// follow r through the declared pipeline instead. V, slot gaps and unwritten slots get no
// freedom. Cost: per differing head, 9 re-runs of the head (approximate) or 2 norms and 4
// rotations per pair (unspecified).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"

namespace kvc::testkit {

// One K head (layer, token, head) whose stored values differ from the oracle's and that the
// declared freedom accounts for.
struct FreedKHead {
  int layer = 0;
  std::int64_t token = 0;
  std::int64_t slot = 0;
  std::int64_t head = 0;
  std::int64_t differing = 0;    // elements unlike the oracle's
  std::int64_t max_ulps = 0;     // the largest of their ulp distances from the oracle's
  std::int64_t budget_ulps = 0;  // unspecified: the widest per-element budget within the head
  int r_steps = 0;               // approximate reciprocal: r' = r + r_steps fp32 ulps
  float r_used = 0.0f;           // approximate reciprocal: r'
};

struct KNormFreedomReport {
  StackedProfile profile;
  std::int64_t heads_differing = 0;     // K heads unlike the oracle's
  std::int64_t heads_outside = 0;       // of those, the ones the freedom does not account for
  std::vector<FreedKHead> freed;        // every head the freedom accounts for
  std::int64_t elements_checked = 0;    // unspecified: elements given a budget
  std::int64_t widest_budget_ulps = 0;  // unspecified: over every element given a budget
  std::int64_t widest_r_ulps = 0;       // unspecified: the widest r interval, in fp32 ulps
};

// `actual` with every K head the profile's freedom accounts for replaced by the `expected` bytes
// (so that the pools' exact comparison then sees only what no declaration excuses). `expected` is
// the oracle's run of `c` under `profile`; `projection` the stored projection the epilogue read
// ([T, projection_width()]). With a profile that fixes every byte it returns `actual` unchanged.
StackedCtxKvOutputs excuse_k_norm_freedom(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& projection,
                                          const StackedProfile& profile, const StackedCtxKvOutputs& expected,
                                          const StackedCtxKvOutputs& actual, KNormFreedomReport* report);

// The budget's derivation, its figures and every head that needed it, for a verdict's report.
std::string format_k_norm_freedom(const StackedCtxKvCase& c, const KNormFreedomReport& report,
                                  const std::string& actual_name);

// The per-element budget of one head under an unspecified reduction: for the stored projected K
// `k` (hd values of `storage`), the weight, eps and cos/sin row, the lowest and highest stored
// rotated value each element may take (as 16-bit bits of `storage`), and the r interval.
struct KHeadBudget {
  std::vector<std::uint16_t> lo;
  std::vector<std::uint16_t> hi;
  float r_lo = 0.0f;
  float r_hi = 0.0f;
};
KHeadBudget unspecified_reduction_budget(const std::uint16_t* k, std::int64_t head_dim, const float* weight, float eps,
                                         const float* cos_sin_row, DType storage, const StackedProfile& profile);

}  // namespace kvc::testkit
