// check_result_json.h: one check as JSON, both ways.
//
// The same object is a row of the run's JSON report ("checks", json_report.h) and a result line
// of a suite's journal, which the child process running the suite writes and the parent reads
// back (suite_journal.h). Reading it back must give the check the parent would have recorded in
// process: verdict, message, seconds, bytes per ABI op, mismatch classes and the approximate-rsqrt
// tally, or the merged report would differ from a run in one process.
//
//   {"where", "suite", "op", "format", "name", "verdict", "seconds", "message",
//    "bytes_compared" and "bytes_by_op" (kernel checks),
//    "mismatch_classes" (failures with classified cache differences),
//    "approx_rsqrt": {"rows_checked", "rows_moved", "max_ulps"} (norm rows judged that way)}
#pragma once

#include <nlohmann/json.hpp>

#include "run_report.h"

namespace kvc::runner {

nlohmann::json check_result_to_json(const CheckResult& c);

// Throws std::invalid_argument naming what is missing or unknown (a verdict, an op, a class).
CheckResult check_result_from_json(const nlohmann::json& j);

}  // namespace kvc::runner
