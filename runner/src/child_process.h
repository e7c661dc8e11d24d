// child_process.h: running work in a child process, its output going where ours goes.
//
// The run starts one process per suite (suite_children.h) and must learn how each ended: exited
// with a status, or killed by a signal (a segmentation fault, abort()), or never started. Either
// a program is started (posix_spawn: a fresh process image) or this process is copied (fork: no
// start-up cost, but nothing that cannot cross a fork may be used in the copy, CUDA above all).
// The child inherits stdout and stderr, so its progress lines appear as it prints them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvc::runner {

enum class ProcessEndKind : std::uint8_t { kExited, kSignalled, kNotStarted };

struct ProcessEnd {
  ProcessEndKind kind = ProcessEndKind::kNotStarted;
  int code = 0;       // the exit status, or the signal
  std::string error;  // kNotStarted: why

  bool exited_zero() const { return kind == ProcessEndKind::kExited && code == 0; }
  // "exit status 1", "killed by signal 6: Aborted", "not started: <why>"
  std::string describe() const;
};

// Runs `program` with `args` (argv[1..]; no shell) and waits for it. Flushes stdout and stderr
// first, so that what this process printed comes before what the child prints.
ProcessEnd run_child_process(const std::string& program, const std::vector<std::string>& args);

// Runs `body` in a copy of this process (fork) and waits for it; the copy exits with body's
// return value, through _exit (no destructor or atexit handler of this process runs twice).
// Flushes stdout and stderr first, as above.
ProcessEnd run_forked(const std::function<int()>& body);

// This process's executable (/proc/self/exe), to start another of it.
std::string this_executable();

}  // namespace kvc::runner
