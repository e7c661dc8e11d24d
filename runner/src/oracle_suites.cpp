// oracle_suites.cpp: the CPU conformance of the oracle (see oracle_suites.h).
#include "oracle_suites.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "testkit/cases/registry.h"
#include "kvc/golden/fixture.h"
#include "kvc/golden/fixture_check.h"
#include "kvc/oracle/parallel_rows.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/judge.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/planted/planted_defects.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "fixture_verdict.h"
#include "recording_backend.h"
#include "stopwatch.h"

namespace kvc::runner {
namespace {

CheckResult check(const char* suite, std::string op, std::string format, std::string name) {
  return make_check(kOracleSide, suite, std::move(op), std::move(format), std::move(name));
}

oracle::OracleOptions oracle_options(const RunOptions& options) {
  oracle::OracleOptions o;
  o.mutation = options.oracle_mutation;
  return o;
}

std::string format_key(RecordFormat f) { return std::string(layout_of(f).name); }

// ---- golden: the oracle against the frozen fixtures ----

void golden_suite(const RunOptions& options, const RunSink& sink) {
  std::vector<std::string> manifests;
  try {
    manifests = golden::fixture_manifests(options.fixtures_dir);
  } catch (const std::exception& e) {
    manifests.clear();
    sink.begin_suite("oracle golden: fixtures in " + options.fixtures_dir, 1);
    CheckResult r = check(kSuiteGolden, "-", "-", "fixtures");
    if (!sink.starts(r)) return;
    fail(r, std::string("cannot list the fixtures: ") + e.what());
    sink.record(r);
    return;
  }
  std::vector<golden::Fixture> fixtures;
  std::vector<CheckResult> corrupt;
  for (const std::string& path : manifests) {
    try {
      golden::Fixture f = golden::load_fixture(path);
      const std::optional<ResolvedInsertCase> resolved = resolve(f.c);
      if (!options.selects(f.c.op) || !resolved || !options.selects(resolved->format) ||
          !options.within_tokens(f.c.num_inserted()))
        continue;
      fixtures.push_back(std::move(f));
    } catch (const golden::CorruptFixtureError& e) {
      CheckResult r = check(kSuiteGolden, "-", "-", std::filesystem::path(path).stem().string());
      fail(r,
           std::string("corrupt fixture (restore it from version control, never regenerate it to pass): ") + e.what());
      corrupt.push_back(r);
    }
  }
  if (manifests.empty()) {
    sink.begin_suite("oracle golden: fixtures in " + options.fixtures_dir, 1);
    CheckResult r = check(kSuiteGolden, "-", "-", "fixtures");
    if (!sink.starts(r)) return;
    fail(r, "no fixture manifests in " + options.fixtures_dir + " (--fixtures DIR)");
    sink.record(r);
    return;
  }
  sink.begin_suite(
      "oracle golden: " + std::to_string(fixtures.size()) + " frozen fixtures (" + options.fixtures_dir + ")",
      fixtures.size() + corrupt.size());
  for (CheckResult& r : corrupt)
    if (sink.starts(r)) sink.record(r);
  testkit::OracleBackend oracle(oracle_options(options));
  for (const golden::Fixture& f : fixtures) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteGolden, op_key(f.c.op), f.record_format, f.name);
    if (!sink.starts(r)) continue;
    RecordingBackend recorder(oracle);
    judge_fixture(f, recorder, r);
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

// ---- invalid: every rule broken alone ----

void invalid_suite(const RunOptions& options, const RunSink& sink) {
  std::vector<testkit::RuleMatrixEntry> cells;
  for (const testkit::RuleMatrixEntry& e : testkit::rule_matrix())
    if (options.selects(e.op) && options.selects(e.format)) cells.push_back(e);
  sink.begin_suite("oracle invalid: every validation rule broken alone, per op and format", cells.size());
  testkit::OracleBackend oracle(oracle_options(options));
  for (const testkit::RuleMatrixEntry& e : cells) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteInvalid, op_key(e.op), format_key(e.format), testkit::rule_matrix_name(e));
    if (!sink.starts(r)) continue;
    InsertCase c = testkit::small_valid_case(e.op, e.format);
    InsertOutputs out = testkit::make_outputs(c);
    if (!e.breaker->apply(c, out)) {
      r.verdict = Verdict::kSkipped;
      r.message = "the base case offers this breaker nothing to break";
    } else {
      const InsertOutputs before = out;
      const Status s = oracle.run(c, out);
      if (s.code != e.breaker->code)
        fail(r, "expected E" + std::to_string(static_cast<int>(e.breaker->code)) + " " +
                    std::string(error_name(e.breaker->code)) + ", got " + s.ToString());
      if (out.cache != before.cache || out.q_out != before.q_out)
        fail(r, std::string(r.message.empty() ? "" : "; ") + "a rejected case wrote into its outputs");
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

// ---- registry: the oracle on the registry's scenarios ----

// Bytes outside the addressed records, and addressed records left as they were.
void check_locality(const InsertCase& c, const InsertOutputs& initial, const InsertOutputs& out, CheckResult& r) {
  testkit::ReportContext ctx;
  ctx.expected_name = "the backing before the call";
  ctx.actual_name = "the oracle's";
  if (const std::string stray = testkit::stray_write_report(c, initial.cache, out.cache, ctx); !stray.empty()) {
    fail(r, stray);
    return;
  }
  const oracle::PagedCacheView view = testkit::view_of(c);
  const RecordLayout& l = view.layout();
  for (std::int64_t slot : testkit::addressed_slots(c)) {
    const auto data = out.cache.begin() + oracle::token_data_offset(view, slot);
    const auto before = initial.cache.begin() + oracle::token_data_offset(view, slot);
    if (std::equal(data, data + l.data_bytes, before)) {
      fail(r, "slot " + std::to_string(slot) + " is addressed but its record was not written");
      return;
    }
  }
}

void registry_case(const RunOptions& options, InsertOp op, const cases::ConformanceSpec& spec, CheckResult& r) {
  const InsertCase c = cases::build_case(op, spec, 0);
  const InsertOutputs initial = testkit::make_outputs(c);
  InsertOutputs out = initial;
  oracle::OracleOptions o = oracle_options(options);
  if (const Status s = testkit::OracleBackend(o).run(c, out); !s.ok()) {
    fail(r, "the oracle rejected a registry case: " + s.ToString());
    return;
  }
  check_locality(c, initial, out, r);
  if (r.verdict == Verdict::kFailed) return;
  // Rows run on several threads from 2 * kMinRowsPerThread rows on: the bytes must not depend on it.
  if (c.num_inserted() >= 2 * oracle::kMinRowsPerThread) {
    o.threads = 1;
    InsertOutputs serial = initial;
    (void)testkit::OracleBackend(o).run(c, serial);
    if (serial.cache != out.cache || serial.q_out != out.q_out) {
      testkit::ReportContext ctx;
      ctx.expected_name = "oracle on 1 thread";
      ctx.actual_name = "oracle on every thread";
      fail(r, "the bytes depend on the thread count\n" +
                  testkit::format_case_report(c, testkit::diff_case_backings(c, serial.cache, out.cache), serial.cache,
                                              out.cache, ctx));
    }
  }
}

// The upstream DSpark test on the oracle: legacy (dummy query) and KV-only write the same cache,
// round by round; the all -1 round writes nothing.
void dspark_case(const RunOptions& options, const cases::ConformanceSpec& spec, CheckResult& r) {
  testkit::OracleBackend oracle(oracle_options(options));
  for (int round = 0; round < cases::kUpstreamRounds; ++round) {
    const InsertCase kv_only = cases::build_kv_only(spec, round), legacy = cases::build_legacy(spec, round);
    const InsertOutputs initial = testkit::make_outputs(kv_only);
    InsertOutputs a = initial, b = testkit::make_outputs(legacy);
    const Status sa = oracle.run(kv_only, a), sb = oracle.run(legacy, b);
    const std::string at = "round " + std::to_string(round) + ": ";
    if (!sa.ok() || !sb.ok()) {
      fail(r, at + "rejected: KV-only " + sa.ToString() + ", legacy " + sb.ToString());
      return;
    }
    if (a.cache != b.cache) {
      testkit::ReportContext ctx;
      ctx.expected_name = "legacy insert (dummy query)";
      ctx.actual_name = "KV-only insert";
      fail(r, at + "the two ops wrote different caches\n" +
                  testkit::format_case_report(kv_only, testkit::diff_case_backings(kv_only, b.cache, a.cache), b.cache,
                                              a.cache, ctx));
      return;
    }
    const bool any_live = !testkit::addressed_slots(kv_only).empty();
    if ((a.cache != initial.cache) != any_live) {
      fail(r, at + (any_live ? "live slots but nothing was written" : "every slot -1 but bytes changed"));
      return;
    }
  }
}

void registry_suite(const RunOptions& options, const RunSink& sink) {
  const std::int64_t limit = options.max_tokens > 0 ? options.max_tokens : kOracleRegistryMaxTokens;
  std::vector<std::pair<InsertOp, cases::ConformanceSpec>> matrix;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    if (!options.selects(op)) continue;
    for (const cases::ConformanceSpec& spec : cases::kernel_matrix(op))
      if (options.selects(spec.format) && spec.tokens <= limit) matrix.push_back({op, spec});
  }
  std::vector<cases::ConformanceSpec> dspark;
  if (options.selects(InsertOp::kKvOnly) && options.selects(InsertOp::kLegacy))
    for (const cases::ConformanceSpec& spec : cases::conformance_matrix())
      if (options.selects(spec.format) && spec.tokens <= limit) dspark.push_back(spec);
  sink.begin_suite("oracle registry: the kernel matrix up to " + std::to_string(limit) +
                       " tokens and the upstream DSpark scenario, on the oracle",
                   matrix.size() + dspark.size());
  for (const auto& [op, spec] : matrix) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteRegistry, op_key(op), format_key(spec.format), spec.name());
    if (!sink.starts(r)) continue;
    registry_case(options, op, spec, r);
    r.seconds = clock.seconds();
    sink.record(r);
  }
  for (const cases::ConformanceSpec& spec : dspark) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteRegistry, kBothOps, format_key(spec.format), "UpstreamDspark_" + spec.name());
    if (!sink.starts(r)) continue;
    dspark_case(options, spec, r);
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

// ---- checker: the judge catches every planted defect and its classifier names it ----

void checker_suite(const RunOptions& options, const RunSink& sink) {
  std::vector<std::pair<testkit::PlantedDefect, RecordFormat>> cells;
  if (options.selects(InsertOp::kKvOnly))
    for (testkit::PlantedDefect d : testkit::kAllPlantedDefects)
      for (RecordFormat f : kAllFormats)
        if (options.selects(f) && testkit::planted_defect_applies(d, f)) cells.push_back({d, f});
  sink.begin_suite("oracle checker: each planted defect caught and named by the mismatch classifier", cells.size());
  for (const auto& [d, f] : cells) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteChecker, "kv_only", format_key(f), std::string(testkit::planted_defect_name(d)));
    if (!sink.starts(r)) continue;
    testkit::DefectBackend planted(d);
    const testkit::Verdict v = testkit::run_and_judge_insert(planted, testkit::planted_case(d, f));
    const testkit::MismatchClass want = testkit::expected_class(d);
    if (!v.oracle_status.ok() || !v.library_status.ok()) {
      fail(r, "the planted case was rejected: " + v.oracle_status.ToString() + " / " + v.library_status.ToString());
    } else if (v.passed()) {
      fail(r, planted.name() + " wrote the oracle's bytes: the judge has nothing to catch");
    } else {
      const testkit::MismatchClassification& m = v.classes;
      if (m.count(want) == 0 || m.count(want) != m.total_sites())
        fail(r, planted.name() + ": expected every site to be " + std::string(testkit::mismatch_class_name(want)) +
                    ", got " + m.summary_line() + "\n" + m.report());
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

}  // namespace

void run_oracle_suite(const std::string& suite, const RunOptions& options, const RunSink& sink) {
  if (suite == kSuiteGolden) return golden_suite(options, sink);
  if (suite == kSuiteInvalid) return invalid_suite(options, sink);
  if (suite == kSuiteRegistry) return registry_suite(options, sink);
  if (suite == kSuiteChecker) return checker_suite(options, sink);
  throw std::invalid_argument("no oracle suite '" + suite + "'");
}

}  // namespace kvc::runner
