// program_run.h: run a built program as a user would, and keep its exit status and its output.
//
// The command-line tests (fuzz/test, runner/test) check both what a command prints and how it
// exits. The shell runs it with stdout and stderr sent to a log file, which is read back, so the
// output of a program that crashes half-way is still there to print.
#pragma once

#include <cstddef>
#include <string>

namespace kvc::testkit {

struct ProgramRun {
  std::string command;  // the shell line that ran, redirection included
  int status = -1;      // the exit status; -1 when the program did not exit normally
  std::string output;   // stdout and stderr as they interleaved
};

// Runs `<env> '<binary>' <args> > '<log_path>' 2>&1` through the shell. `env` is a prefix such
// as "CUDA_VISIBLE_DEVICES=-1" or "env -u NAME", or empty; `args` is spliced in as written.
ProgramRun run_program(const std::string& binary, const std::string& args, const std::string& log_path,
                       const std::string& env = "");

// "$ <command>\n-> exit <status>\n<output>\n" on stdout, the output cut at `max_output_chars`:
// the test log shows what ran, even when the test passes.
void print_program_run(const ProgramRun& r, std::size_t max_output_chars = std::string::npos);

}  // namespace kvc::testkit
