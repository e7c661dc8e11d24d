// json_report.cpp: a run as JSON (see json_report.h).
#include "json_report.h"

#include "kvc/contract.h"

namespace kvc::runner {

nlohmann::json run_to_json(const RunReport& report) {
  nlohmann::json j;
  j["kvconform_run"] = kRunJsonVersion;
  j["contract_version"] = kContractVersion;
  j["library"] = report.library;
  j["device"] = report.device;
  j["profile"] = report.profile;
  j["cpu_only"] = report.cpu_only;
  j["kernel_conformance"] = {{"ran", report.kernels_ran}, {"skipped_reason", report.kernels_skipped_reason}};
  j["counts"] = {{"passed", report.count(Verdict::kPassed)},
                 {"failed", report.count(Verdict::kFailed)},
                 {"skipped", report.count(Verdict::kSkipped)}};
  j["seconds"] = report.seconds;
  j["exit_code"] = report.exit_code();
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
  j["checks"] = nlohmann::json::array();
  for (const CheckResult& c : report.checks) {
    nlohmann::json row = {{"where", c.side},      {"suite", c.suite},
                          {"op", c.op},           {"format", c.format},
                          {"name", c.name},       {"verdict", std::string(verdict_name(c.verdict))},
                          {"seconds", c.seconds}, {"message", c.message}};
    if (!c.classes.empty()) row["mismatch_classes"] = c.classes.to_json();
    j["checks"].push_back(row);
  }
  return j;
}

}  // namespace kvc::runner
