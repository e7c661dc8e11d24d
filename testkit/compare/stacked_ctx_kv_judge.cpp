// stacked_ctx_kv_judge.cpp: the stacked op's judge (see stacked_ctx_kv_judge.h).
#include "testkit/compare/stacked_ctx_kv_judge.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_fp64.h"
#include "kvc/stacked_ctx_kv_eligibility.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"
#include "testkit/compare/stacked_k_norm_freedom.h"

namespace kvc::testkit {
namespace {

// Collects a judgment: the first failure decides the kind, every failure is told.
class Judgment {
 public:
  explicit Judgment(Verdict& v) : v_(v) {}
  void fail(VerdictKind kind, const std::string& text) {
    if (v_.kind == VerdictKind::kMatch) v_.kind = kind;
    text_ << text;
  }
  std::ostringstream& text() { return text_; }
  void finish() { v_.report = text_.str(); }

 private:
  Verdict& v_;
  std::ostringstream text_;
};

// The pools of `actual` against `expected`, both of case `c`: the elements compared, the report
// on a difference. With `freedom` (a profile that leaves the K-norm's r free, and the projection
// its epilogue read), the K heads the declared budget accounts for are excused first and the
// budget is reported.
struct Freedom {
  const StackedProfile* profile;
  const std::vector<std::uint16_t>* projection;
};
void judge_pools(const StackedCtxKvCase& c, const StackedCtxKvOutputs& expected, const StackedCtxKvOutputs& given,
                 const std::string& expected_name, const std::string& actual_name, const std::string& reproduce,
                 Verdict& v, Judgment& j, const Freedom* freedom = nullptr) {
  StackedCtxKvOutputs excused;
  const StackedCtxKvOutputs* compared = &given;
  if (freedom != nullptr && !freedom->profile->k_norm_exact()) {
    KNormFreedomReport fr;
    excused = excuse_k_norm_freedom(c, *freedom->projection, *freedom->profile, expected, given, &fr);
    compared = &excused;
    j.text() << format_k_norm_freedom(c, fr, actual_name);
  }
  const StackedCtxKvOutputs& actual = *compared;
  const StackedDiffReport d = diff_stacked_pools(c, expected, actual);
  v.compared_bytes += d.compared_elements * 2;
  if (!d.equal())
    j.fail(VerdictKind::kMismatch, format_stacked_report(c, d, expected_name, actual_name, "reproduce: " + reproduce));
}

void judge_exact_projection(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& expected,
                            const std::vector<std::uint16_t>& actual, const std::string& name, Verdict& v,
                            Judgment& j) {
  v.compared_bytes += static_cast<std::int64_t>(std::min(expected.size(), actual.size()) * 2);
  if (const std::string d = projection_difference(c, expected, actual); !d.empty())
    j.fail(VerdictKind::kMismatch, name + ": the stored projection differs from the oracle's: " + d + "\n");
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The profile a run is judged under: its own (the library's declaration for the path it took),
// else the call's default.
const StackedProfile& profile_of(const StackedRun& run, const StackedProfile& default_profile) {
  return run.profile ? *run.profile : default_profile;
}

bool all_exact(const std::vector<StackedRun>& runs, const StackedProfile& default_profile) {
  if (runs.empty()) return default_profile.k_norm_exact();
  for (const StackedRun& r : runs)
    if (!profile_of(r, default_profile).k_norm_exact()) return false;
  return true;
}

}  // namespace

std::vector<std::uint16_t> projection_rows(const std::vector<std::uint16_t>& projection, std::int64_t width,
                                           const std::vector<std::int64_t>& tokens) {
  std::vector<std::uint16_t> rows;
  for (std::int64_t t : tokens)
    rows.insert(rows.end(), projection.begin() + t * width, projection.begin() + (t + 1) * width);
  return rows;
}

std::string projection_difference(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& expected,
                                  const std::vector<std::uint16_t>& actual) {
  if (expected.size() != actual.size())
    return "projection sizes " + std::to_string(expected.size()) + " vs " + std::to_string(actual.size());
  const std::int64_t width = c.projection_width();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    const std::int64_t t = static_cast<std::int64_t>(i) / width, col = static_cast<std::int64_t>(i) % width;
    int l = 0;
    while (l + 1 < c.num_layers() && col >= c.projection_column(l + 1)) ++l;
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    const std::int64_t within = col - c.projection_column(l);
    return "projection token " + std::to_string(t) + " layer " + std::to_string(l) +
           (within >= layer.kv_size() ? " V" : " K") + " head " +
           std::to_string((within % layer.kv_size()) / layer.head_dim) + " dim " +
           std::to_string(within % layer.head_dim) + ": expected " + describe16(expected[i], c.storage_dtype()) +
           " actual " + describe16(actual[i], c.storage_dtype()) + ", " +
           std::to_string(ulp_distance16(expected[i], actual[i], c.storage_dtype())) + " ulp";
  }
  return {};
}

std::string stacked_path_hole(const StackedCtxKvCase& c, const StackedRun& run) {
  if (run.path != StackedPath::kStacked) return "";
  const StackedEligibility e = stacked_ctx_kv_eligibility(c);
  if (e.eligible()) return "";
  return run.name + " took the stacked path on a model ineligible for it: " + e.to_string() +
         " (the stacked path writes every layer in layer 0's shape; docs/contract.md §4.5 eligibility)\n";
}

namespace {

// The oracle's run of the judged tokens under one profile.
struct OracleUnder {
  StackedProfile profile;
  Status status;
  StackedCtxKvOutputs expected;
  oracle::StackedCtxKvRun run;
};

const OracleUnder& oracle_under(std::vector<OracleUnder>& runs, const StackedCtxKvCase& judged,
                                const StackedProfile& profile) {
  for (const OracleUnder& o : runs)
    if (o.profile == profile) return o;
  OracleUnder o;
  o.profile = profile;
  o.expected = make_stacked_outputs(judged);
  oracle::StackedCtxKvOptions under;
  under.profile = profile;
  o.status = oracle::stacked_ctx_kv(judged, o.expected, under, &o.run);
  runs.push_back(std::move(o));
  return runs.back();
}

}  // namespace

Verdict judge_stacked(const StackedCtxKvCase& c, const std::vector<std::int64_t>& sampled_tokens, StackedGemm gemm,
                      const std::vector<StackedRun>& runs, const std::string& reproduce,
                      const StackedProfile& default_profile) {
  Verdict v;
  Judgment j(v);
  const bool sampled = !sampled_tokens.empty();
  const StackedCtxKvCase judged = sampled ? with_tokens(c, sampled_tokens) : c;
  const std::string oracle_name = sampled ? "oracle (sampled tokens)" : "oracle";
  // One oracle run per profile judged under: at most one per run and the default, reserved so that
  // the references oracle_under() returns stay valid.
  std::vector<OracleUnder> oracles;
  oracles.reserve(runs.size() + 1);
  v.oracle_status = oracle_under(oracles, judged, default_profile).status;
  std::optional<oracle::ProjectionFp64> fp64;  // any order: computed once, on the first run that needs it
  const std::int64_t width = c.projection_width();
  std::vector<std::string> profiles_named;
  for (const StackedRun& run : runs) {
    const StackedProfile& profile = profile_of(run, default_profile);
    const std::string named = "`" + stacked_profile_name(profile) + "`" +
                              (run.profile && !run.profile_source.empty() ? " (" + run.profile_source + ")" : "");
    if (std::find(profiles_named.begin(), profiles_named.end(), named) == profiles_named.end())
      profiles_named.push_back(named);
    const OracleUnder& oracle = oracle_under(oracles, judged, profile);
    const StackedCtxKvOutputs& expected = oracle.expected;
    const oracle::StackedCtxKvRun& oracle_run = oracle.run;
    if (run.status.code != oracle.status.code) {
      v.library_status = run.status;
      v.oracle_status = oracle.status;
      j.fail(VerdictKind::kStatusDiffers, run.name + ": status " + run.status.ToString() + ", the oracle's " +
                                              oracle.status.ToString() + " under stacked profile " + named + "\n");
      continue;
    }
    if (!run.status.ok()) {
      if (v.kind == VerdictKind::kMatch) v.kind = VerdictKind::kRejectedAlike;
      j.text() << run.name << ": rejected as the oracle does (" << run.status.ToString() << ")\n";
      continue;
    }
    if (const std::string hole = stacked_path_hole(c, run); !hole.empty())
      j.fail(VerdictKind::kWrongPath, hole);
    else if (run.required_path && run.path != *run.required_path)
      j.fail(VerdictKind::kWrongPath, run.name + " took the " + path_name(run.path) +
                                          " path; this call must take the " + path_name(*run.required_path) +
                                          " path (" + stacked_ctx_kv_eligibility(c).to_string() + ")\n");
    const std::optional<std::vector<std::uint16_t>> projection =
        !run.projection ? std::nullopt
                        : std::optional<std::vector<std::uint16_t>>(
                              sampled ? projection_rows(*run.projection, width, sampled_tokens) : *run.projection);
    if (gemm == StackedGemm::kExactOrder) {
      const Freedom freedom{&profile, &oracle_run.projection};
      judge_pools(judged, expected, sampled ? pools_at_written_slots(judged, run.pools) : run.pools, oracle_name,
                  run.name, reproduce, v, j, &freedom);
      if (projection) judge_exact_projection(judged, oracle_run.projection, *projection, run.name, v, j);
      continue;
    }
    if (!projection) {
      j.fail(VerdictKind::kMismatch, run.name + ": an any-order run is judged by its stored projection: none read\n");
      continue;
    }
    if (!fp64) fp64 = oracle::stacked_ctx_kv_projection_fp64(judged);
    const ProjectionBudgetReport b = compare_projection_under_budget(judged, oracle_run.projection, *projection, *fp64);
    v.compared_bytes += b.compared * 2;
    const std::string budget = format_budget_report(judged, b, run.name);
    if (b.within())
      j.text() << budget;
    else
      j.fail(VerdictKind::kMismatch, budget + "reproduce: " + reproduce + "\n");
    // Every token: the pools are the oracle's epilogue of this run's own projection.
    StackedCtxKvOutputs epilogue = make_stacked_outputs(c);
    if (const Status s = oracle::stacked_ctx_kv_epilogue(c, *run.projection, epilogue, profile); !s.ok()) {
      j.fail(VerdictKind::kMismatch,
             run.name + ": the oracle's epilogue rejected the projection: " + s.ToString() + "\n");
      continue;
    }
    const Freedom freedom{&profile, &*run.projection};
    judge_pools(c, epilogue, run.pools, "oracle epilogue of the " + run.name + " projection", run.name, reproduce, v, j,
                &freedom);
  }
  // An exact order on a sample: the runs agree on every token too (the oracle saw only the sample),
  // when they are judged under one profile (two profiles may write different bytes).
  if (gemm == StackedGemm::kExactOrder && sampled)
    for (std::size_t k = 1; k < runs.size(); ++k) {
      if (!runs[0].status.ok() || !runs[k].status.ok()) continue;
      if (profile_of(runs[0], default_profile) != profile_of(runs[k], default_profile)) continue;
      judge_pools(c, runs[0].pools, runs[k].pools, runs[0].name, runs[k].name, reproduce, v, j);
      if (runs[0].projection && runs[k].projection)
        if (const std::string d = projection_difference(c, *runs[0].projection, *runs[k].projection); !d.empty())
          j.fail(VerdictKind::kMismatch,
                 runs[k].name + " and " + runs[0].name + " stored different projections: " + d + "\n");
    }
  if (v.kind == VerdictKind::kMatch)
    j.text() << runs.size() << " run(s), " << gemm_name(gemm) << " GEMM, stacked profile "
             << (profiles_named.empty() ? "`" + stacked_profile_name(default_profile) + "`"
                                        : join_names(profiles_named))
             << ": every compared byte is the oracle's"
             << (all_exact(runs, default_profile) ? "" : " or within the declared K-norm budget") << " ("
             << v.compared_bytes << " bytes)\n";
  j.finish();
  return v;
}

}  // namespace kvc::testkit
