// probe_report.h: what `kvconform probe` prints and writes: a line per call (cell, the codes the
// rule calls for, the class, where), a count per class, and the same as JSON. The probe reports,
// it does not judge: there is no verdict, only classes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testkit/probe/classify_probe.h"

namespace kvc::runner {

struct ProbeRow {
  std::string cell;    // "SlotBeyondTheCache_KvOnly_Packed584"
  std::string family;  // "insert", "store", "stacked"
  std::string rule;    // "SlotBeyondTheCache"
  std::string op;      // "kv_only"
  std::string format;  // "packed584"
  int code = 0;        // the rule's code
  std::vector<int> right_codes;
  testkit::ProbeVerdict verdict;
  bool declared_enforced = true;  // false: the library declares it does not enforce the rule
  std::optional<int> status;      // what the entry point returned, when the child reported
  double seconds = 0;             // the child's wall time (0 for a call not sent)
};

struct ProbeReport {
  std::string library;
  std::string device;
  std::uint64_t seed = 1;
  std::vector<std::string> not_probed;  // families left out, and why ("kvc_store_rotated is not exported: ...")
  std::vector<ProbeRow> rows;
};

// The table's header line and one call's line ("... [not declared enforced]" beside the class).
std::string probe_table_header();
std::string probe_row_line(const ProbeRow& row);
// The count per class (every class, zeros included) and the closing line.
std::string probe_summary(const ProbeReport& report);
// {"kvconform_probe": 1, "library", "device", "seed", "not_probed", "calls": [...], "summary": {class: n}}
nlohmann::json probe_to_json(const ProbeReport& report);

}  // namespace kvc::runner
