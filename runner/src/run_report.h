// run_report.h: what `kvconform run` found: one result per check, the summary table per op x
// format, and the exit status.
//
// A check is one case of one suite: a registry scenario, a golden fixture, a rule-breaking case,
// a planted defect of the checker's self-test. It passed, failed (with the report and, for cache
// differences, the mismatch classes), or was skipped with a reason (never counted as passed). The
// summary groups checks by where they ran (the CPU oracle, or the kernel library), suite, op and
// format; skip reasons are listed with their counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "testkit/compare/mismatch_classes.h"

namespace kvc::runner {

enum class Verdict : std::uint8_t { kPassed, kFailed, kSkipped };
std::string_view verdict_name(Verdict v);  // "passed", "failed", "skipped"

// Where a check ran: the CPU oracle's own conformance, or the kernel library on the device.
inline constexpr const char* kOracleSide = "oracle";
inline constexpr const char* kKernelSide = "kernel";

struct CheckResult {
  std::string side;    // kOracleSide or kKernelSide
  std::string suite;   // "golden", "invalid", "registry", "checker", "matrix", "dspark"
  std::string op;      // "kv_only", "legacy", "kv_only+legacy" (the DSpark scenario)
  std::string format;  // "packed584", ...
  std::string name;    // "Packed584_Tokens17_Bs16_Padded", a fixture, a rule, a defect
  Verdict verdict = Verdict::kPassed;
  std::string message;  // the failure report, or the skip reason
  double seconds = 0.0;
  testkit::MismatchClassification classes;  // failures with cache differences

  // "kernel.matrix.kv_only.packed584": the JUnit class name and the summary group.
  std::string group() const { return side + "." + suite + "." + op + "." + format; }
};

// A passed check of `side` (kOracleSide or kKernelSide) until fail() or a skip says otherwise.
CheckResult make_check(const char* side, const char* suite, std::string op, std::string format, std::string name);
// Marks the check failed and appends `message` to its report (one line per call).
void fail(CheckResult& r, const std::string& message);

struct GroupCounts {
  std::int64_t passed = 0, failed = 0, skipped = 0;
  std::map<std::string, std::int64_t> skip_reasons;
  double seconds = 0.0;
};

// The exit status of `kvconform run`.
inline constexpr int kRunPassed = 0;
inline constexpr int kRunFailed = 1;          // a check failed
inline constexpr int kRunUsage = 2;           // bad arguments, a library that does not load, unreadable fixtures
inline constexpr int kRunKernelsSkipped = 3;  // no failure, but kernel conformance could not run (no --cpu-only)

struct RunReport {
  std::string library;    // the kernel library's description, or "" when none was loaded
  std::string device;     // the device, or why there is none
  std::string profile;    // the profile kernels are checked under: "declared by the library" or a spec
  bool cpu_only = false;  // --cpu-only: kernel conformance was not asked for
  bool kernels_ran = false;
  std::string kernels_skipped_reason;  // when they did not run
  std::vector<CheckResult> checks;
  double seconds = 0.0;

  std::int64_t count(Verdict v) const;
  // side, suite, op, format -> counts, in first-seen order of the groups.
  std::vector<std::pair<std::tuple<std::string, std::string, std::string, std::string>, GroupCounts>> groups() const;
  testkit::MismatchClassification classes() const;  // over every failed check
  int exit_code() const;
  // The summary: the table per op x format, skip reasons, the mismatch classes over all failures,
  // the result line (and loudly, when kernel conformance was skipped).
  std::string summary() const;
};

}  // namespace kvc::runner
