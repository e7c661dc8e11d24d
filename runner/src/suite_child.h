// suite_child.h: the process that runs one suite of `kvconform run`, started by the run itself
// (suite_children.h), never by a user:
//
//   kvconform run <the run's options> --child-suite kernel:matrix --child-journal FILE
//                 [--child-first-check K]
//
// It runs the suite from check K on (the checks before it are left out, unbuilt), prints its
// progress lines (progress_printer.h) and writes its journal (suite_journal.h): "started" before
// each check's work, its result after. In a kernel suite it asks after every check, and when a
// check throws, whether the CUDA context is lost (cuda_fault.h); if it is, or a check throws
// anything else, it records the check that was running as failed ("CUDA fault: <name>: <text>",
// or the exception), writes "stopped" and exits at once: the run goes on in a new process.
//
// Test-only: KVC_RUN_TEST_CHILD_CRASH=<side>:<suite>:<index>:<how> makes this process crash at
// check <index> of that suite (how: `abort` after its "started" line, `throw` an exception from
// it, `abort-between` before its "started" line, i.e. outside any check, `hang` forever after its
// "started" line, as a kernel that never finishes), so that the CPU tests
// can show what a crashed suite leaves in the report. Read only here; docs/runner.md.
#pragma once

#include <cstddef>
#include <string>

#include "run_options.h"
#include "suite_plan.h"

namespace kvc::runner {

inline constexpr const char* kPlantedChildCrashEnv = "KVC_RUN_TEST_CHILD_CRASH";

struct ChildSuiteOptions {
  SuiteRef suite;
  std::string journal;          // the journal file to create
  std::size_t first_check = 0;  // the first check to run
};

// Runs the suite; returns the exit status (0: it ran to its end). Exits instead of returning when a
// check ends the process (above). Throws std::runtime_error when the journal cannot be created.
int run_child_suite(const ChildSuiteOptions& child, const RunOptions& options);

}  // namespace kvc::runner
