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
#include "run_report.h"

namespace kvc::runner {

// The oracle's registry checks stop here unless --max-tokens says otherwise: the larger kernel
// matrix scenarios take no path through the oracle that 16384 tokens do not (its rows run on
// several threads from 512 rows on), and on a CPU machine they take minutes.
inline constexpr std::int64_t kOracleRegistryMaxTokens = 16384;

inline constexpr const char* kSuiteGolden = "golden";      // frozen fixtures
inline constexpr const char* kSuiteInvalid = "invalid";    // every validation rule broken alone
inline constexpr const char* kSuiteRegistry = "registry";  // the oracle on the registry's scenarios
inline constexpr const char* kSuiteChecker = "checker";    // the classifier on planted defects
inline constexpr const char* kSuiteMatrix = "matrix";      // the kernel matrix against the oracle
inline constexpr const char* kSuiteDspark = "dspark";      // the upstream DSpark scenario
inline constexpr std::array<const char*, 6> kAllSuites = {kSuiteGolden,  kSuiteInvalid, kSuiteRegistry,
                                                          kSuiteChecker, kSuiteMatrix,  kSuiteDspark};

struct RunOptions {
  std::vector<InsertOp> ops;            // empty: both
  std::vector<RecordFormat> formats;    // empty: all
  std::vector<std::string> suites;      // empty: all
  std::int64_t max_tokens = 0;          // 0: no limit (the oracle's registry checks: kOracleRegistryMaxTokens)
  std::optional<kvc::Profile> profile;  // kernels compared under it instead of their declaration
  std::string kernels;                  // "" : KVC_KERNELS when set, else ours
  bool cpu_only = false;
  std::string fixtures_dir;
  // The oracle under test in the CPU conformance: a deliberately broken one shows that the
  // CPU checks can fail (and how the classifier names the defect).
  oracle::OracleMutation oracle_mutation = oracle::OracleMutation::kNone;

  bool selects(InsertOp op) const;
  bool selects(RecordFormat f) const;
  bool selects_suite(const std::string& suite) const;
  bool within_tokens(std::int64_t tokens) const { return max_tokens <= 0 || tokens <= max_tokens; }
};

// "kv_only" / "legacy"; the DSpark scenario runs both ops: "kv_only+legacy".
std::string op_key(InsertOp op);
inline constexpr const char* kBothOps = "kv_only+legacy";

// How suites report: a suite announces itself with the number of checks it will make, then
// records each result as it finishes.
struct RunSink {
  std::function<void(const std::string& title, std::size_t checks)> begin_suite;
  std::function<void(CheckResult)> record;
};

}  // namespace kvc::runner
