// probe_process.h: one child process per probed call, so that a crash, a CUDA fault (which
// poisons the whole CUDA context) or a hang is the call's class and never the end of the probe.
//
// testkit/process/program_run.h runs a program through the shell, which cannot tell a signal from
// an exit status and cannot stop a program that hangs; the probe needs both, and runs several
// calls at once, so a child is spawned directly (posix_spawn), its stdout and stderr sent to one
// file, and looked at without blocking until it ends or its time is up (then it is killed).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "testkit/probe/classify_probe.h"
#include "testkit/probe/probe_observation.h"

namespace kvc::runner {

struct ChildRun {
  testkit::ChildOutcome outcome;       // reported: the output holds a probe result line
  testkit::ProbeObservation observed;  // that line's observation, when reported
  std::string output;                  // stdout and stderr as they interleaved
};

class ChildProcess {
 public:
  // Starts `argv` (argv[0] the program's path) with its output sent to `log_path`, which it
  // removes when done. Throws std::runtime_error when the process cannot be started.
  ChildProcess(const std::vector<std::string>& argv, std::string log_path, double limit_seconds);
  ~ChildProcess();  // kills a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Without blocking: true once the child has ended, or has been killed for running past the
  // limit; then result() holds how.
  bool finished();
  const ChildRun& result() const { return run_; }
  double seconds() const;

 private:
  void collect(int wait_status, bool timed_out);

  std::string log_path_;
  double limit_seconds_;
  std::chrono::steady_clock::time_point start_;
  pid_t pid_ = -1;
  bool done_ = false;
  ChildRun run_;
};

// Runs one child to its end (polling).
ChildRun run_child(const std::vector<std::string>& argv, const std::string& log_path, double limit_seconds);

// Runs every command, at most `jobs` at a time, each with its output in `<log_prefix><index>.log`
// and at most `limit_seconds`; an empty command is not run. Calls `done(index, run, seconds)` in
// index order as the commands end (run is nullptr for an empty command). Throws
// std::runtime_error when a process cannot be started (those running are killed).
using ChildDone = std::function<void(std::size_t index, const ChildRun* run, double seconds)>;
void run_children_in_order(const std::vector<std::vector<std::string>>& commands, const std::string& log_prefix,
                           int jobs, double limit_seconds, const ChildDone& done);

// The path of the running program (/proc/self/exe), to re-execute it as the child.
std::string own_executable();

}  // namespace kvc::runner
