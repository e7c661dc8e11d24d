// child_outcome.h: what one process that ran (part of) a suite adds to the run's report, from its
// journal (suite_journal.h) and how it ended (child_process.h).
//
//   - its journal ends with "end": its results; the suite is done.
//   - a check ended it: its results, and that check failed. When the process recorded it itself
//     (a CUDA fault: "stopped" naming the check) its result says so; when it died in the check (a
//     signal, an exit from inside a library: "started" without "result") the check is failed here
//     with how the process ended; a check that wrote no result within --check-timeout is failed
//     "HUNG" (the run killed its process). The suite resumes after that check, in a new process,
//     unless it was the last.
//   - it ended outside any check (in the suite's setup, between two checks, before its journal
//     began): nothing to blame and nothing to skip, so the suite ends early: a failed check
//     "process" says how, and the incident "suite <s> ended early: <n> checks not run".
// A resumed process always starts after a check its predecessor started, so a suite of n checks
// takes at most n + 1 processes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"
#include "run_report.h"
#include "suite_journal.h"
#include "suite_plan.h"

namespace kvc::runner {

// The name of the failed check that stands for a suite that ended outside any check.
inline constexpr const char* kProcessCheckName = "process";

struct ChildOutcome {
  std::vector<CheckResult> checks;       // the journal's results, in order, then a check failed here (if any)
  bool last_made_here = false;           // the last of `checks` was failed here: the process could not print it
  std::string incident;                  // "" when the process ran the suite to its end cleanly
  std::optional<std::size_t> resume_at;  // the check the next process starts at
  std::size_t total = 0;                 // the suite's checks as announced (0: never announced)
};

// `first_check`: where this process was asked to start.
ChildOutcome child_outcome(const SuiteRef& suite, std::size_t first_check, const SuiteJournal& journal,
                           const ProcessEnd& end);

// A kernel check that ended its process never said which ABI ops it called: each op its op column
// names ("kv_only", "kv_only+legacy" of the DSpark scenario, ...) is recorded as called with 0
// bytes compared, so that the coverage per op counts it failed.
void mark_ops_called(CheckResult& r);

}  // namespace kvc::runner
