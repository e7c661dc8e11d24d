// run_options.h: what `kvconform run` was asked to check, and how its suites report back.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "kvc/oracle/options.h"
#include "kvc/profile.h"
#include "kvc/stacked_profile.h"
#include "abi_op.h"
#include "run_report.h"

namespace kvc::runner {

// The oracle's registry checks stop here unless --max-tokens says otherwise: the larger kernel
// matrix scenarios take no path through the oracle that 16384 tokens do not (its rows run on
// several threads from 512 rows on), and on a CPU machine they take minutes.
inline constexpr std::int64_t kOracleRegistryMaxTokens = 16384;

inline constexpr const char* kSuiteGolden = "golden";              // frozen fixtures
inline constexpr const char* kSuiteInvalid = "invalid";            // every validation rule broken alone
inline constexpr const char* kSuiteRegistry = "registry";          // the oracle on the registry's scenarios
inline constexpr const char* kSuiteChecker = "checker";            // the classifier on planted defects
inline constexpr const char* kSuiteMatrix = "matrix";              // the kernel matrix against the oracle
inline constexpr const char* kSuiteDspark = "dspark";              // the upstream DSpark scenario
inline constexpr const char* kSuiteKvNorm = "kv_norm";             // the standalone kv_norm against the oracle
inline constexpr const char* kSuiteFusedKvNorm = "fused_kv_norm";  // the KV-only matrix with a kv_norm weight
inline constexpr const char* kSuiteStore = "store";                // the store op on the KV-only matrix's rows
inline constexpr const char* kSuiteStacked = "stacked";            // the stacked context-KV registry
inline constexpr std::array<const char*, 10> kAllSuites = {
    kSuiteGolden, kSuiteInvalid, kSuiteRegistry,    kSuiteChecker, kSuiteMatrix,
    kSuiteDspark, kSuiteKvNorm,  kSuiteFusedKvNorm, kSuiteStore,   kSuiteStacked};

// A check whose process writes no result for this long is HUNG: the process is killed, the check
// failed, and the suite goes on after it (suite_children.h). The slowest check on an H200 takes
// ~30 s (the stacked op at 8 layers, 8192 tokens); a slower GPU gets ten times that.
inline constexpr double kDefaultCheckTimeoutSeconds = 300;

struct RunOptions {
  std::vector<AbiOp> ops;               // empty: all
  std::vector<RecordFormat> formats;    // empty: all
  std::vector<std::string> suites;      // empty: all
  std::int64_t max_tokens = 0;          // 0: no limit (the oracle's registry checks: kOracleRegistryMaxTokens)
  std::optional<kvc::Profile> profile;  // kernels compared under it instead of their declaration
  // The stacked op judged under it instead of the stacked policies the library declares per path.
  std::optional<kvc::StackedProfile> stacked_profile;
  std::string kernels;  // "" : KVC_KERNELS when set, else ours
  bool cpu_only = false;
  std::string fixtures_dir;
  double check_timeout_seconds = kDefaultCheckTimeoutSeconds;  // <= 0: wait forever
  // The oracle under test in the CPU conformance: a deliberately broken one shows that the
  // CPU checks can fail (and how the classifier names the defect).
  oracle::OracleMutation oracle_mutation = oracle::OracleMutation::kNone;

  bool selects(AbiOp op) const;
  // The insert entry point's cases of the oracle suites: kv_only is selected by kv_only or
  // kv_only+kv_norm (the fused op's cases are KV-only cases with a weight).
  bool selects(InsertOp op) const;
  bool selects(RecordFormat f) const;
  bool selects_suite(const std::string& suite) const;
  bool within_tokens(std::int64_t tokens) const { return max_tokens <= 0 || tokens <= max_tokens; }
  // The kernel suites are asked to check `op`: --ops selects it and a selected suite calls it.
  bool checks_op(AbiOp op) const;
};

// "kv_only" / "legacy" (the op column of the oracle suites and of the kernel suites of the two
// inserts); the DSpark scenario runs both ops: "kv_only+legacy".
std::string op_key(InsertOp op);
inline constexpr const char* kBothOps = "kv_only+legacy";

// How suites report: a suite announces itself with the number of checks it will make, then
// for each check says that it starts (before any of its work) and records its result.
struct RunSink {
  std::function<void(const std::string& title, std::size_t checks)> begin_suite;
  std::function<void(CheckResult)> record;
  // The check as made (side, suite, op, format, name), before its work: the process running the
  // suite notes it ("started", suite_journal.h), so that a crash is blamed on that check; a
  // process resumed after a crash answers false for the checks before it, which the suite then
  // leaves out. Unset: every check runs.
  std::function<bool(const CheckResult&)> start;

  // Whether to run the check (start's answer, true when unset).
  bool starts(const CheckResult& r) const { return !start || start(r); }
};

}  // namespace kvc::runner
