// json_report.cpp: a run as JSON (see json_report.h).
#include "json_report.h"

#include "check_result_json.h"
#include "kvc/contract.h"

namespace kvc::runner {

nlohmann::json run_to_json(const RunReport& report) {
  nlohmann::json j;
  j["kvconform_run"] = kRunJsonVersion;
  j["contract_version"] = kContractVersion;
  j["library"] = report.library;
  j["device"] = report.device;
  j["profile"] = report.profile;
  j["stacked_profile"] = report.stacked_profile;
  j["cpu_only"] = report.cpu_only;
  j["verdict"] = std::string(run_verdict_name(report.verdict()));
  j["exit_code"] = report.exit_code();
  j["kernel_conformance"] = {{"ran", report.kernel_conformance_ran()},
                             {"suites_ran", report.kernel_suites_ran},
                             {"skipped_reason", report.kernels_skipped_reason},
                             {"kernel_bytes_compared", report.kernel_bytes_compared()}};
  j["coverage"] = nlohmann::json::array();
  if (!report.declarations.empty()) {
    for (const OpCoverage& c : report.coverage()) {
      j["coverage"].push_back({{"op", std::string(abi_op_name(c.op))},
                               {"entry_point", std::string(abi_op_symbol(c.op))},
                               {"exported", c.declaration.exported == Export::kExported},
                               {"declared_supported", c.declaration.supported},
                               {"profiles", c.declaration.profiles},
                               {"approximate_rsqrt", c.declaration.approximate_rsqrt},
                               {"selected", c.selected},
                               {"checks", c.checks},
                               {"passed", c.passed},
                               {"failed", c.failed},
                               {"skipped", c.skipped},
                               {"bytes_compared", c.bytes_compared},
                               {"status", std::string(op_status_name(c.status))}});
    }
  }
  if (const ApproxRsqrtTally t = report.approx_rsqrt(); !t.empty())
    j["approx_rsqrt"] = {{"rows_checked", t.rows_checked}, {"rows_moved", t.rows_moved}, {"max_ulps", t.max_ulps}};
  j["counts"] = {{"passed", report.count(Verdict::kPassed)},
                 {"failed", report.count(Verdict::kFailed)},
                 {"skipped", report.count(Verdict::kSkipped)}};
  j["seconds"] = report.seconds;
  j["summary"] = nlohmann::json::array();
  for (const auto& [key, g] : report.groups()) {
    const auto& [side, suite, op, format] = key;
    nlohmann::json row = {{"where", side},        {"suite", suite},      {"op", op},
                          {"format", format},     {"passed", g.passed},  {"failed", g.failed},
                          {"skipped", g.skipped}, {"seconds", g.seconds}};
    row["skip_reasons"] = nlohmann::json::object();
    for (const auto& [reason, n] : g.skip_reasons) row["skip_reasons"][reason] = n;
    j["summary"].push_back(row);
  }
  j["mismatch_classes"] = report.classes().to_json();
  j["incidents"] = report.incidents;
  j["checks"] = nlohmann::json::array();
  for (const CheckResult& c : report.checks) j["checks"].push_back(check_result_to_json(c));
  return j;
}

}  // namespace kvc::runner
