// stacked_ctx_kv_diff.h: the comparators of the stacked context-KV op.
//
// diff_stacked_pools(): every layer's K and V pool compared byte for byte (as 16-bit elements),
// each mismatch located through the pool view: layer, K or V, slot, the token that writes that
// slot (or none: a write where the case writes nothing), head, dim, or the gap between slots;
// with the expected and actual values decoded and their ulp distance. The report is bounded: a
// count by layer and pool, then the first mismatches.
//
// compare_projection_under_budget(): a stored projection from a GEMM that sums in another order,
// against the oracle's, under the ulp budget of docs/contract.md §4.5 (oracle/stacked_ctx_kv_fp64.h):
// element (t, column) may differ by at most D_budget * ulp_D(S') with S' from the fp64 magnitude
// sum. The report names the budget, how much of it was used, the ulp distances seen, and every
// element beyond it with its layer, token, head, K or V, dim.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kvc/oracle/stacked_ctx_kv_fp64.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "testkit/backends/backing.h"

namespace kvc::testkit {

// Distance of two 16-bit values of `dtype` in representable steps (-0 and +0 are 0 apart);
// -1 when exactly one is NaN, 0 when both are.
std::int64_t ulp_distance16(std::uint16_t a, std::uint16_t b, DType dtype);
// "0x3c00 (1)", "0x7fff (nan)".
std::string describe16(std::uint16_t bits, DType dtype);

struct PoolMismatch {
  int layer = 0;
  bool v_pool = false;      // K pool otherwise
  std::int64_t slot = -1;   // -1: outside every slot (before the view's first element)
  std::int64_t token = -1;  // the token whose cache_loc is `slot`; -1: no token writes this slot
  std::int64_t head = -1;   // -1: the gap between slots (slot stride > kv_size)
  std::int64_t dim = -1;
  std::uint16_t expected = 0;
  std::uint16_t actual = 0;
  std::int64_t ulp_distance = 0;
};

struct StackedDiffReport {
  std::int64_t compared_elements = 0;
  std::int64_t mismatch_count = 0;
  bool size_mismatch = false;                          // a pool buffer of another size, or another layer count
  std::vector<PoolMismatch> first;                     // up to kShown, in layer, K/V, offset order
  std::map<std::string, std::int64_t> count_by_class;  // "layer 2 K", "layer 0 V gap", "layer 1 K unwritten slot"
  std::int64_t max_ulp_distance = 0;                   // over mismatches where both are numbers
  static constexpr std::size_t kShown = 8;

  bool equal() const { return mismatch_count == 0 && !size_mismatch; }
};

StackedDiffReport diff_stacked_pools(const StackedCtxKvCase& c, const StackedCtxKvOutputs& expected,
                                     const StackedCtxKvOutputs& actual);

// "layer 2 K token 3 (slot 17) head 1 dim 40: expected 0x3c00 (1) actual 0x3c01 (1.00098), 1 ulp"
std::string describe_mismatch(const PoolMismatch& m, DType dtype);

// The whole report: a headline, the count by class, the first mismatches, and `reproduce`.
std::string format_stacked_report(const StackedCtxKvCase& c, const StackedDiffReport& report,
                                  const std::string& expected_name, const std::string& actual_name,
                                  const std::string& reproduce);

// `pools` with every element outside the head elements of the slots `c` writes replaced by
// `canary`: what a run of `c` (a token subset of a larger case, with_tokens) must equal when
// `pools` come from the larger run.
StackedCtxKvOutputs pools_at_written_slots(const StackedCtxKvCase& c, const StackedCtxKvOutputs& pools,
                                           std::uint8_t canary = kCanary);

struct ProjectionMismatch {
  int layer = 0;
  bool v_rows = false;
  std::int64_t token = 0;
  std::int64_t head = 0;
  std::int64_t dim = 0;
  std::uint16_t expected = 0;
  std::uint16_t actual = 0;
  std::int64_t ulp_distance = 0;
  double allowance = 0;  // D_budget * ulp_D(S'), in value units
  double magnitude = 0;  // S
};

struct ProjectionBudgetReport {
  std::int64_t compared = 0;
  std::int64_t beyond_budget = 0;
  std::int64_t terms = 0;  // the largest term count n of the layers' dot products (hidden, + 1 with a bias)
  double budget = 0;       // D_budget for `terms`
  double max_used = 0;     // max over elements of |expected - actual| / ulp_D(S')
  std::int64_t max_ulp_distance = 0;
  std::map<std::int64_t, std::int64_t> ulp_histogram;  // plain ulp distance -> elements (3 = "3 or more")
  std::vector<ProjectionMismatch> first;               // up to kShown beyond the budget
  static constexpr std::size_t kShown = 8;

  bool within() const { return beyond_budget == 0; }
};

// `expected` and `actual` are [T, projection_width()] stored projections; `reference` the fp64
// projection of the same case.
ProjectionBudgetReport compare_projection_under_budget(const StackedCtxKvCase& c,
                                                       const std::vector<std::uint16_t>& expected,
                                                       const std::vector<std::uint16_t>& actual,
                                                       const oracle::ProjectionFp64& reference);

// The budget, its derivation, what was used and the elements beyond it.
std::string format_budget_report(const StackedCtxKvCase& c, const ProjectionBudgetReport& report,
                                 const std::string& actual_name);

}  // namespace kvc::testkit
