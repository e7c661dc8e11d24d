// json_report.h: a run as JSON (`kvconform run --json FILE`).
//
//   {"kvconform_run": 2, "contract_version": 2, "library": ..., "device": ..., "profile": ...,
//    "cpu_only": false, "verdict": "passed" (run_verdict_name()), "exit_code": n,
//    "kernel_conformance": {"ran": true only when kernel bytes were compared, "suites_ran": ...,
//                           "skipped_reason": "", "kernel_bytes_compared": n},
//    "coverage": [{"op", "entry_point", "exported", "declared_supported": ["packed584/bf16", ...],
//                  "profiles", "approximate_rsqrt", "selected", "checks", "passed", "failed",
//                  "skipped", "bytes_compared", "status"}] (one per ABI op when a library was loaded),
//    "approx_rsqrt": {"rows_checked", "rows_moved", "max_ulps"} (when rows were judged that way),
//    "counts": {"passed": n, "failed": n, "skipped": n}, "seconds": s,
//    "summary": [{"where", "suite", "op", "format", "passed", "failed", "skipped", "seconds",
//                 "skip_reasons": {reason: n}}],
//    "mismatch_classes": {...over every failed check (mismatch_classes.h)...},
//    "incidents": ["kernel matrix: check [301/368] ... ended its process (CUDA fault: ...); ...",
//                  "suite kernel store ended early: 12 checks not run (...)"] (suite_children.h),
//    "checks": [{"where", "suite", "op", "format", "name", "verdict", "seconds", "message",
//                "bytes_compared" and "bytes_by_op" (kernel checks),
//                "mismatch_classes" (failures with classified cache differences),
//                "approx_rsqrt" (norm rows judged under it)} (check_result_json.h)]}
//
// The library is named once, at the top; check messages call it "the library".
// Version 2: kernel_conformance.ran means "kernel bytes were compared" (version 1: "the kernel
// suites ran"), and verdict, coverage, approx_rsqrt and the bytes were added; incidents came
// later, as a field a version 2 reader may ignore.
#pragma once

#include <nlohmann/json.hpp>

#include "run_report.h"

namespace kvc::runner {

inline constexpr int kRunJsonVersion = 2;

nlohmann::json run_to_json(const RunReport& report);

}  // namespace kvc::runner
