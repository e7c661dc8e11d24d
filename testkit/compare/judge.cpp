// judge.cpp: the judge (see judge.h).
#include "testkit/compare/judge.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

#include "kvc/oracle/options.h"
#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/store_cases.h"
#include "testkit/compare/q_out_diff.h"

namespace kvc::testkit {
namespace {

oracle::OracleOptions oracle_options(const kvc::Profile& declared, const JudgeOptions& options) {
  oracle::OracleOptions o;
  o.level = options.oracle_level;
  o.profile = declared;
  return o;
}

// "cache: 3 bytes changed, the first at offset 17 (0xa5 -> 0x00)": raw bytes only, since a
// rejected case may have metadata no codec can read.
std::string changed_bytes(const char* what, const std::vector<std::uint8_t>& before,
                          const std::vector<std::uint8_t>& after) {
  if (before == after) return "";
  if (before.size() != after.size())
    return std::string("  ") + what + ": size " + std::to_string(before.size()) + " -> " +
           std::to_string(after.size()) + "\n";
  std::int64_t changed = 0, first = -1;
  for (std::size_t i = 0; i < before.size(); ++i)
    if (before[i] != after[i]) {
      ++changed;
      if (first < 0) first = static_cast<std::int64_t>(i);
    }
  char line[160];
  std::snprintf(line, sizeof line, "  %s: %lld bytes changed, the first at offset %lld (0x%02x -> 0x%02x)\n", what,
                static_cast<long long>(changed), static_cast<long long>(first), before[static_cast<std::size_t>(first)],
                after[static_cast<std::size_t>(first)]);
  return line;
}

// The statuses' part of a judgment. True when they settle it (v.kind set): the library's status
// differs from the oracle's, or both rejected the case. False when both accepted it: the bytes
// decide.
bool settled_by_status(Verdict& v, const std::vector<std::uint8_t>& initial_cache,
                       const std::vector<std::uint8_t>& initial_q_out, const std::string& name, std::ostream& s) {
  if (v.oracle_status.code != v.library_status.code) {
    v.kind = VerdictKind::kStatusDiffers;
    s << name << ": status differs from the oracle's (declared profile `" << kvc::profile_name(v.profile) << "`)\n"
      << "  oracle: " << v.oracle_status.ToString() << "\n"
      << "  " << name << ": " << v.library_status.ToString() << "\n";
    return true;
  }
  if (v.oracle_status.ok()) return false;
  v.compared_bytes = static_cast<std::int64_t>(v.actual.cache.size() + v.actual.q_out.size());
  const std::string cache = changed_bytes("cache", initial_cache, v.actual.cache);
  const std::string q_out = changed_bytes("q_out", initial_q_out, v.actual.q_out);
  v.kind = cache.empty() && q_out.empty() ? VerdictKind::kRejectedAlike : VerdictKind::kWroteWhenRejected;
  s << name << ": rejected as the oracle does (" << v.library_status.ToString() << ")";
  if (v.kind == VerdictKind::kRejectedAlike) {
    s << "; nothing written\n";
  } else {
    s << "; but it WROTE into its outputs\n" << cache << q_out;
  }
  return true;
}

std::string sizes_differ(const char* what, std::size_t expected, std::size_t actual) {
  return std::string("  ") + what + " of " + std::to_string(actual) + " bytes, the oracle's of " +
         std::to_string(expected) + "\n";
}

}  // namespace

Verdict judge_insert(const InsertCase& c, const kvc::Profile& declared, const Status& library_status,
                     InsertOutputs initial, InsertOutputs actual, const JudgeOptions& options) {
  Verdict v;
  v.profile = declared;
  v.library_status = library_status;
  v.expected = initial;
  v.oracle_status = OracleBackend(oracle_options(declared, options)).run(c, v.expected);  // the one oracle run
  v.actual = std::move(actual);
  const std::string& name = options.library_name;
  std::ostringstream s;
  if (settled_by_status(v, initial.cache, initial.q_out, name, s)) {
    v.report = s.str();
    return v;
  }
  const bool q_judged = options.q_out == QOutJudgment::kCompared;
  if (!q_judged) v.expected.q_out = v.actual.q_out;
  const std::int64_t q_bytes = q_judged ? static_cast<std::int64_t>(v.actual.q_out.size()) : 0;
  const bool cache_sizes_equal = v.expected.cache.size() == v.actual.cache.size();
  const auto check_cache = [&] {
    v.policy = check_insert_under_profile(c, declared, initial.cache, v.expected.cache, v.actual.cache, name);
    s << v.policy.text;
  };
  if (declared.rsqrt == RsqrtMode::kApproximate && !norm_rows(c).empty()) {
    // Norm rows row by row within the declared window; every other byte exactly.
    v.rsqrt = compare_under_rsqrt_mode(c, RsqrtMode::kApproximate, v.expected, v.actual, declared);
    v.compared_bytes = static_cast<std::int64_t>(std::min(v.expected.cache.size(), v.actual.cache.size())) + q_bytes;
    v.kind = v.rsqrt.accepted && cache_sizes_equal ? VerdictKind::kMatch : VerdictKind::kMismatch;
    if (v.kind == VerdictKind::kMismatch) check_cache();
    s << v.rsqrt.report;
  } else {
    check_cache();
    const std::string q_out = q_out_difference_report(c, v.expected.q_out, v.actual.q_out);
    v.compared_bytes = v.policy.compared_bytes + q_bytes;
    v.kind = v.policy.equal() && cache_sizes_equal && q_out.empty() ? VerdictKind::kMatch : VerdictKind::kMismatch;
    if (!q_out.empty()) s << "  q_out differs from the oracle's (profiles do not concern the Q output)\n" << q_out;
  }
  if (!cache_sizes_equal) s << sizes_differ("a backing", v.expected.cache.size(), v.actual.cache.size());
  if (v.kind == VerdictKind::kMismatch && cache_sizes_equal && v.expected.cache != v.actual.cache)
    v.classes = classify_insert_mismatches(c, declared, initial.cache, v.expected.cache, v.actual.cache, &v.policy);
  v.report = s.str();
  return v;
}

Verdict judge_insert(const InsertCase& c, const kvc::Profile& declared, const Status& library_status,
                     InsertOutputs actual, const JudgeOptions& options) {
  return judge_insert(c, declared, library_status, make_outputs(c), std::move(actual), options);
}

Verdict judge_store(const StoreCase& c, const kvc::Profile& declared, const Status& library_status,
                    std::vector<std::uint8_t> initial, std::vector<std::uint8_t> actual, const JudgeOptions& options) {
  Verdict v;
  v.profile = declared;
  v.library_status = library_status;
  v.expected.cache = initial;
  v.oracle_status = OracleBackend(oracle_options(declared, options)).run_store(c, v.expected.cache);  // the one run
  v.actual.cache = std::move(actual);
  const std::string& name = options.library_name;
  std::ostringstream s;
  if (settled_by_status(v, initial, {}, name, s)) {
    v.report = s.str();
    return v;
  }
  v.policy = check_store_under_profile(c, declared, initial, v.expected.cache, v.actual.cache, name);
  v.compared_bytes = v.policy.compared_bytes;
  const bool sizes_equal = v.expected.cache.size() == v.actual.cache.size();
  v.kind = v.policy.equal() && sizes_equal ? VerdictKind::kMatch : VerdictKind::kMismatch;
  s << v.policy.text;
  if (!sizes_equal) s << sizes_differ("a backing", v.expected.cache.size(), v.actual.cache.size());
  v.report = s.str();
  return v;
}

Verdict judge_store(const StoreCase& c, const kvc::Profile& declared, const Status& library_status,
                    std::vector<std::uint8_t> actual, const JudgeOptions& options) {
  return judge_store(c, declared, library_status, make_store_backing(c), std::move(actual), options);
}

Verdict run_and_judge_insert(Backend& backend, const InsertCase& c) {
  const InsertOutputs initial = make_outputs(c);
  InsertOutputs actual = initial;
  const Status s = backend.run(c, actual);
  JudgeOptions options;
  options.library_name = backend.name();
  return judge_insert(c, backend.declared_profile(c), s, initial, std::move(actual), options);
}

Verdict run_and_judge_store(Backend& backend, const StoreCase& c) {
  const std::vector<std::uint8_t> initial = make_store_backing(c);
  std::vector<std::uint8_t> actual = initial;
  const Status s = backend.run_store(c, actual);
  JudgeOptions options;
  options.library_name = backend.name();
  return judge_store(c, backend.declared_store_profile(c), s, initial, std::move(actual), options);
}

}  // namespace kvc::testkit
