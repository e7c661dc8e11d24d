// probe_report.cpp: the probe's table, summary and JSON (see probe_report.h).
#include "probe_report.h"

#include <cstdio>
#include <map>

namespace kvc::runner {
namespace {

constexpr int kCellWidth = 46;
constexpr int kExpectedWidth = 26;
constexpr int kClassWidth = 34;
constexpr const char* kNotEnforced = "not declared enforced";

std::string padded(const std::string& s, int width) {
  std::string out = s;
  if (static_cast<int>(out.size()) < width) out.append(static_cast<std::size_t>(width) - out.size(), ' ');
  return out + " ";
}

std::string expected_of(const ProbeRow& row) {
  std::string s;
  for (int code : row.right_codes) s += (s.empty() ? "" : " or ") + testkit::probe_status_text(code);
  return s;
}

}  // namespace

std::string probe_table_header() {
  return "  " + padded("cell", kCellWidth) + padded("expected", kExpectedWidth) + padded("class", kClassWidth) +
         "where\n";
}

std::string probe_row_line(const ProbeRow& row) {
  std::string cls(testkit::probe_class_text(row.verdict.cls));
  if (!row.declared_enforced) cls += " [" + std::string(kNotEnforced) + "]";
  return "  " + padded(row.cell, kCellWidth) + padded(expected_of(row), kExpectedWidth) + padded(cls, kClassWidth) +
         row.verdict.where + "\n";
}

std::string probe_summary(const ProbeReport& report) {
  std::map<testkit::ProbeClass, int> counts;
  int not_enforced = 0;
  for (const ProbeRow& row : report.rows) {
    ++counts[row.verdict.cls];
    if (!row.declared_enforced) ++not_enforced;
  }
  std::string s = "summary per class (" + std::to_string(report.rows.size()) + " calls)\n";
  for (testkit::ProbeClass c : testkit::kAllProbeClasses) {
    char line[128];
    std::snprintf(line, sizeof line, "  %-36s %6d\n", std::string(testkit::probe_class_text(c)).c_str(), counts[c]);
    s += line;
  }
  if (not_enforced > 0)
    s += "  (" + std::to_string(not_enforced) + " of them for rules the library does not declare it enforces)\n";
  for (const std::string& why : report.not_probed) s += "  not probed: " + why + "\n";
  s += "PROBED: every rule classified (the probe reports what the library does with bad input; it judges nothing)\n";
  return s;
}

nlohmann::json probe_to_json(const ProbeReport& report) {
  nlohmann::json calls = nlohmann::json::array();
  std::map<testkit::ProbeClass, int> counts;
  for (const ProbeRow& row : report.rows) {
    ++counts[row.verdict.cls];
    calls.push_back({{"cell", row.cell},
                     {"family", row.family},
                     {"rule", row.rule},
                     {"op", row.op},
                     {"format", row.format},
                     {"code", row.code},
                     {"right_codes", row.right_codes},
                     {"class", std::string(testkit::probe_class_key(row.verdict.cls))},
                     {"where", row.verdict.where},
                     {"declared_enforced", row.declared_enforced},
                     {"status", row.status ? nlohmann::json(*row.status) : nlohmann::json()},
                     {"seconds", row.seconds}});
  }
  nlohmann::json summary = nlohmann::json::object();
  for (testkit::ProbeClass c : testkit::kAllProbeClasses) summary[std::string(testkit::probe_class_key(c))] = counts[c];
  return {{"kvconform_probe", 1}, {"library", report.library},       {"device", report.device},
          {"seed", report.seed},  {"not_probed", report.not_probed}, {"calls", calls},
          {"summary", summary}};
}

}  // namespace kvc::runner
