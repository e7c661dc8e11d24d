// stacked_ctx_kv_judge.h: the judge of the stacked context-KV projection (docs/contract.md §4.5),
// the sibling of judge.h for an op whose outputs are per-layer pools and a stored projection, not
// a paged cache. It returns the same Verdict (verdict.h).
//
// One judgment covers the library's runs of one case with one GEMM (its AUTO and per-layer paths,
// say), against one oracle run of the judged tokens (every token, or a sample of a case too large
// for the oracle: with_tokens()):
//   - exact order: each run's pools and stored projection equal the oracle's byte for byte (the
//     pools compared by diff_stacked_pools); with a sample, the runs also agree with each other on
//     every token (the same exact order on two paths must write the same bytes);
//   - any order: each run's projection at the judged tokens within the ulp budget of the oracle's
//     (compare_projection_under_budget, against the fp64 projection), and its pools on every token
//     exactly the oracle's epilogue of its own projection: the reordered sum is the only freedom.
// A run's status must be the oracle's (kStatusDiffers), and a run with a required path must have
// taken it (kWrongPath: AUTO on an eligible model handed stacked parameters takes the stacked path,
// on an ineligible one the per-layer path).
//
// Under a declared stacked profile (docs/contract.md §6.2.1) the oracle runs under it: its rope
// contraction, its reduction order where one is declared and its cache_loc rule, so a declared
// order is judged exactly. Where the declaration leaves r free (an approximate reciprocal, an
// unspecified reduction), the K heads that differ are held to the budget of
// stacked_k_norm_freedom.h, which the report prints with every head that needed it.
//
// A run may carry its own profile (StackedRun::profile: the policies the library declares for the
// path it took, e.g. its fused path's): it is judged against the oracle run under that profile,
// and the report names it.
//
// The eligibility hole (issue 25): a run that reports the stacked path on a model the contract
// calls ineligible fails (kWrongPath) with a line that says so and why ("layer 2: head_dim 32 vs
// layer 0's 64"), whether or not the call required a path: a library whose eligibility check
// does not compare head_dim, kv heads or dtype writes every layer in layer 0's shape.
//
// Cost: one oracle run of the judged tokens per judgment and distinct profile; any order adds the fp64 projection of
// those tokens once and the oracle's epilogue of each run's projection; a budget adds per head a
// few re-runs of its epilogue.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"
#include "kvc/status.h"
#include "testkit/compare/verdict.h"

namespace kvc::testkit {

// The projection GEMM a run asks for (kvc_projection_gemm).
enum class StackedGemm : std::uint8_t { kExactOrder = 0, kAnyOrder = 1 };
inline const char* gemm_name(StackedGemm g) {
  return g == StackedGemm::kAnyOrder ? "any-order (cuBLAS)" : "exact-order";
}

// One library run of the case, as the judge sees it.
struct StackedRun {
  std::string name;  // "device AUTO", "device per-layer"
  Status status = Status::Ok();
  StackedPath path = StackedPath::kPerLayer;  // the path the library took
  std::optional<StackedPath> required_path;   // the one this call must take, when the contract says
  StackedCtxKvOutputs pools;                  // every token's
  // The stored projection [T, projection_width()] of every token, when it was read (an any-order
  // run must have one; an exact-order run without one is judged on its pools).
  std::optional<std::vector<std::uint16_t>> projection;
  // The stacked policies this run is judged under, and where they come from ("declared for its
  // per-layer and stacked paths", "--stacked-profile"); unset: the judgment's `profile`.
  std::optional<StackedProfile> profile;
  std::string profile_source;
};

// The report line of a run that took the stacked path on a model ineligible for it, or "" when
// the run took another path or the model is eligible.
std::string stacked_path_hole(const StackedCtxKvCase& c, const StackedRun& run);

// Judges `runs` of case `c` made with `gemm`. `sampled_tokens` empty: every token is judged
// against the oracle; else those tokens (sample_tokens()). `reproduce` ends each report.
// `profile`: the stacked policies the library declares (the contract's by default), for the runs
// that carry none of their own.
Verdict judge_stacked(const StackedCtxKvCase& c, const std::vector<std::int64_t>& sampled_tokens, StackedGemm gemm,
                      const std::vector<StackedRun>& runs, const std::string& reproduce,
                      const StackedProfile& profile = {});

// Rows `tokens` of a [T, width] projection.
std::vector<std::uint16_t> projection_rows(const std::vector<std::uint16_t>& projection, std::int64_t width,
                                           const std::vector<std::int64_t>& tokens);

// The first differing element of two stored projections of `c`, located (token, layer, K or V,
// head, dim, both values and their ulp distance); "" when equal.
std::string projection_difference(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& expected,
                                  const std::vector<std::uint16_t>& actual);

}  // namespace kvc::testkit
