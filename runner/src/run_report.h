// run_report.h: what `kvconform run` found: one result per check, the summary table per op x
// format, the coverage per ABI op, and the verdict with its exit status.
//
// A check is one case of one suite: a registry scenario, a golden fixture, a rule-breaking case,
// a planted defect of the checker's self-test. It passed, failed (with the report and, for cache
// differences, the mismatch classes), or was skipped with a reason (never counted as passed). A
// kernel check also says how many bytes the library wrote that the judge compared, per ABI op it
// called: a run passes only when it compared bytes of every op the library declares supported
// (op_coverage.h). The summary groups checks by where they ran (the CPU oracle, or the kernel
// library), suite, op and format; skip reasons are listed with their counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "abi_op.h"
#include "approx_rsqrt_tally.h"
#include "op_coverage.h"
#include "testkit/compare/mismatch_classes.h"

namespace kvc::runner {

enum class Verdict : std::uint8_t { kPassed, kFailed, kSkipped };
std::string_view verdict_name(Verdict v);  // "passed", "failed", "skipped"

// Where a check ran: the CPU oracle's own conformance, or the kernel library on the device.
inline constexpr const char* kOracleSide = "oracle";
inline constexpr const char* kKernelSide = "kernel";

struct CheckResult {
  std::string side;    // kOracleSide or kKernelSide
  std::string suite;   // "golden", "invalid", "registry", "checker", "matrix", "dspark", "store", ...
  std::string op;      // abi_op_name(), or "kv_only+legacy" (the DSpark scenario)
  std::string format;  // "packed584", ..., "-" for the ops without a cache format
  std::string name;    // "Packed584_Tokens17_Bs16_Padded", a fixture, a rule, a defect
  Verdict verdict = Verdict::kPassed;
  std::string message;  // the failure report, or the skip reason
  double seconds = 0.0;
  testkit::MismatchClassification classes;  // failures with cache differences
  // Kernel checks: the bytes the library wrote that the judge compared, per ABI op the check
  // called. Every op the check called has an entry, 0 when nothing it wrote was compared (the
  // check was skipped, or the call was rejected where the oracle accepts). A rejection the
  // oracle shares counts the whole backing (and q_out) compared for "nothing written"; a case
  // the harness rejects before the library is called counts nothing. Oracle checks have none.
  std::map<AbiOp, std::int64_t> bytes_by_op;
  ApproxRsqrtTally rsqrt;  // norm rows judged under a declared approximate rsqrt

  // "kernel.matrix.kv_only.packed584": the JUnit class name and the summary group.
  std::string group() const { return side + "." + suite + "." + op + "." + format; }
  std::int64_t bytes_compared() const;
  // Records that the check called `abi_op` and compared `bytes` of what it wrote (0: called only).
  void add_bytes(AbiOp abi_op, std::int64_t bytes) { bytes_by_op[abi_op] += bytes; }
};

// A passed check of `side` (kOracleSide or kKernelSide) until fail() or a skip says otherwise.
CheckResult make_check(const char* side, const char* suite, std::string op, std::string format, std::string name);
// Marks the check failed and appends `message` to its report (one line per call).
void fail(CheckResult& r, const std::string& message);
// Marks the check skipped with `reason`.
void skip(CheckResult& r, const std::string& reason);

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
inline constexpr int kRunNothingChecked = 4;  // no failure, the kernel suites ran, but compared no kernel byte
inline constexpr int kRunIncomplete = 5;      // no failure, but an op declared supported compared no byte

// The run's verdict, one per exit status above (usage errors end the run before a report).
enum class RunVerdict : std::uint8_t { kPassed, kFailed, kKernelsSkipped, kNothingChecked, kIncomplete };
// "passed", "failed", "kernels_skipped", "nothing_checked", "incomplete" (the JSON's verdict)
std::string_view run_verdict_name(RunVerdict v);

struct RunReport {
  std::string library;                 // the kernel library's description, or "" when none was loaded
  std::string device;                  // the device, or why there is none
  std::string profile;                 // the profile kernels are checked under: "declared by the library" or a spec
  std::string stacked_profile;         // the stacked op's: "declared by the library per path" or a spec
  bool cpu_only = false;               // --cpu-only: kernel conformance was not asked for
  bool kernel_suites_ran = false;      // the kernel suites ran (whether or not they compared anything)
  std::string kernels_skipped_reason;  // when they did not run
  // What the library declares per op; empty when no library was loaded.
  std::vector<OpDeclaration> declarations;
  // The ops --ops and --suites ask the kernel suites to check (every op unless narrowed).
  std::vector<AbiOp> selected_ops{kAllAbiOps.begin(), kAllAbiOps.end()};
  std::vector<CheckResult> checks;
  // What the processes that ran the suites did besides finishing them (suite_children.h): a check
  // that ended its process (a CUDA fault, a crash) and where its suite went on, a suite that ended
  // early. The check that ended a process is among `checks`, failed; these lines say the rest.
  std::vector<std::string> incidents;
  double seconds = 0.0;

  std::int64_t count(Verdict v) const;
  // side, suite, op, format -> counts, in first-seen order of the groups.
  std::vector<std::pair<std::tuple<std::string, std::string, std::string, std::string>, GroupCounts>> groups() const;
  testkit::MismatchClassification classes() const;  // over every failed check
  std::int64_t kernel_bytes_compared() const;       // over every kernel check
  // Kernel conformance ran in the only sense that counts: kernel bytes were compared.
  bool kernel_conformance_ran() const { return kernel_suites_ran && kernel_bytes_compared() > 0; }
  std::vector<OpCoverage> coverage() const;  // one per ABI op, in kAllAbiOps order
  std::vector<AbiOp> uncovered_ops() const;  // the ops whose status is kUncovered
  ApproxRsqrtTally approx_rsqrt() const;     // over every check
  RunVerdict verdict() const;
  int exit_code() const;
  // The summary: the table per op x format, skip reasons, the coverage per ABI op, the
  // approximate-rsqrt tally, the mismatch classes over all failures, the incidents, the result
  // line (and loudly, when kernel conformance was skipped or compared nothing).
  std::string summary() const;
};

}  // namespace kvc::runner
