// suite_children.h: every suite of a run in a process of its own, so that a fault is a verdict,
// not the end of the run.
//
// A kernel that writes through an invalid pointer leaves the process's CUDA context lost (a
// sticky error): in one process every later check would fail, or the process would die before
// the report was written. So the run makes each suite in a process of its own (suite_child.h),
// waits for it, reads its journal (suite_journal.h) and merges its checks into the report
// (child_outcome.h). When a check ended the process (a CUDA fault the process
// reported, or a crash in the check: a signal, an exit), that check is failed and a new process
// goes on from the next check; a process that ended outside any check ends its suite early. The
// run then goes on with the next suite and writes every report as usual.
//
// Why resume after the check rather than skip to the next suite: the checks of a suite are
// independent cases, and a library that faults on large batches only would otherwise get one
// verdict for the first fault and none for every case after it in the suite. The cost is one
// process start (and one CUDA context) per check that ends a process.
//
// How the process starts:
//   - a kernel suite: a new process of this executable, `kvconform run <the run's options>
//     --child-suite kernel:<suite> --child-journal FILE --child-first-check K`. It must be a new
//     image: a CUDA context cannot cross fork(), and the run's process has initialised the driver
//     (it asked for the device). Start-up costs what any kvconform start does (mostly cuBLASLt's
//     initialisers, linked for the stacked op's GEMM), paid again per resumption.
//   - an oracle suite: a fork() of the run's process, which has loaded everything and made no
//     check, so that the CPU suites pay no start-up; they touch no CUDA.
// The oracle's suites run in processes of their own too: one mechanism, the CPU tests can plant a
// crash in it (suite_child.h), and a crash of the oracle is a verdict as well. Measured overhead:
// docs/runner.md ("One process per suite").
#pragma once

#include <string>
#include <vector>

#include "run_options.h"
#include "run_report.h"
#include "suite_plan.h"

namespace kvc::runner {

class SuiteChildren {
 public:
  // `program`: this executable; `run_args`: the arguments of `run` that every process of a kernel
  // suite is given (the run's options, without its reports); `options`: the same, parsed, for the
  // forked processes of the oracle suites. Creates a folder for the journals under the temporary
  // directory; throws std::runtime_error when it cannot.
  SuiteChildren(std::string program, std::vector<std::string> run_args, RunOptions options);
  ~SuiteChildren();  // removes the folder
  SuiteChildren(const SuiteChildren&) = delete;
  SuiteChildren& operator=(const SuiteChildren&) = delete;

  // Runs `suite` in as many processes as it takes, adds its checks and incidents to `report`, and
  // prints the suite's counts (and the lines of checks whose process died in them).
  void run(const SuiteRef& suite, RunReport& report);

 private:
  std::string program_;
  std::vector<std::string> run_args_;
  RunOptions options_;
  std::string folder_;
  int started_ = 0;
};

}  // namespace kvc::runner
