// json_report.h: a run as JSON (`kvconform run --json FILE`).
//
//   {"kvconform_run": 1, "contract_version": 2, "library": ..., "device": ..., "profile": ...,
//    "cpu_only": false, "kernel_conformance": {"ran": true, "skipped_reason": ""},
//    "counts": {"passed": n, "failed": n, "skipped": n}, "seconds": s, "exit_code": n,
//    "summary": [{"where", "suite", "op", "format", "passed", "failed", "skipped", "seconds",
//                 "skip_reasons": {reason: n}}],
//    "mismatch_classes": {...over every failed check (mismatch_classes.h)...},
//    "checks": [{"where", "suite", "op", "format", "name", "verdict", "seconds", "message",
//                "mismatch_classes" (failures with classified cache differences)}]}
#pragma once

#include <nlohmann/json.hpp>

#include "run_report.h"

namespace kvc::runner {

inline constexpr int kRunJsonVersion = 1;

nlohmann::json run_to_json(const RunReport& report);

}  // namespace kvc::runner
