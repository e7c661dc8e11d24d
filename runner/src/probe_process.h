// probe_process.h: one child process per probed call, so that a crash, a CUDA fault (which
// poisons the whole CUDA context) or a hang is the call's class and never the end of the probe.
//
// testkit/process/program_run.h runs a program through the shell, which cannot tell a signal from
// an exit status and cannot stop a program that hangs; the probe needs both, so the child is
// spawned directly (posix_spawn), its stdout and stderr sent to one file, and waited for up to a
// time limit, after which it is killed.
#pragma once

#include <string>
#include <vector>

#include "testkit/probe/classify_probe.h"

namespace kvc::runner {

struct ChildRun {
  testkit::ChildOutcome outcome;       // reported: the output holds a probe result line
  testkit::ProbeObservation observed;  // that line's observation, when reported
  std::string output;                  // stdout and stderr as they interleaved
};

// Runs `argv` (argv[0] the program's path) with its output sent to `log_path`, for at most
// `limit_seconds`. Throws std::runtime_error when the process cannot be started.
ChildRun run_child(const std::vector<std::string>& argv, const std::string& log_path, double limit_seconds);

// The path of the running program (/proc/self/exe), to re-execute it as the child.
std::string own_executable();

}  // namespace kvc::runner
