// run_command.h: `kvconform run`, the conformance run of a kernel library.
//
//   kvconform run [--kernels lib.so] [--ops kv_only,kv_only+kv_norm,legacy,kv_norm,store_rotated,stacked_ctx_kv]
//                 [--formats packed584,...] [--max-tokens N] [--profile SPEC] [--json FILE] [--junit FILE]
//                 [--suites matrix,dspark,golden,invalid,kv_norm,fused_kv_norm,store,stacked,registry,checker]
//                 [--cpu-only] [--fixtures DIR] [--oracle-mutation NAME]
//
// The CPU conformance of the oracle always runs (oracle_suites.h); kernel conformance
// (kernel_suites.h) runs when the build has the device backend and a CUDA device is usable,
// against --kernels, else KVC_KERNELS, else our kernels. Every suite runs in a process of its own
// (suite_children.h), so that a CUDA fault or a crash fails the check it happened in and the run
// goes on; the hidden --child-suite, --child-journal and --child-first-check options make such a
// process (suite_child.h). Progress is printed as checks finish
// (every failure, every check of a second or more, and at least every few seconds), then the
// summary table per op x format and the coverage per ABI op. Exit status (run_report.h): 0 every
// check passed and kernel bytes of every op the library declares supported were compared (or
// --cpu-only); 1 a check failed; 2 usage, a library that does not load, an unwritable report; 3
// no failure, but kernel conformance was skipped and --cpu-only was not given; 4 NOTHING CHECKED:
// the kernel suites ran but compared no byte the library wrote; 5 INCOMPLETE: an op the library
// exports and declares supported compared no byte.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

namespace kvc::runner {

class RunCommand {
 public:
  // Adds `run` under `parent`.
  explicit RunCommand(CLI::App& parent);
  ~RunCommand();
  RunCommand(const RunCommand&) = delete;
  RunCommand& operator=(const RunCommand&) = delete;

  bool selected() const;
  int execute();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kvc::runner
