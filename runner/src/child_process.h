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

// kTimedOut: the parent killed it (SIGKILL) because it made no progress for ProgressWatch::seconds.
enum class ProcessEndKind : std::uint8_t { kExited, kSignalled, kNotStarted, kTimedOut };

// A hung child is killed: `file` (the child's journal) must grow at least every `seconds`. Progress
// is the file's size, not its content: every journal event is one write (suite_journal.h), so a
// check that runs longer than `seconds` without a result is the only thing that trips it.
struct ProgressWatch {
  std::string file;
  double seconds = 0;  // <= 0: wait forever
};

struct ProcessEnd {
  ProcessEndKind kind = ProcessEndKind::kNotStarted;
  int code = 0;       // the exit status, or the signal (kTimedOut: the seconds waited)
  std::string error;  // kNotStarted: why

  bool exited_zero() const { return kind == ProcessEndKind::kExited && code == 0; }
  // "exit status 1", "killed by signal 6: Aborted", "not started: <why>", "killed after 300 s
  // without progress (--check-timeout 300)"
  std::string describe() const;
};

// Runs `program` with `args` (argv[1..]; no shell) and waits for it (or, with `watch`, until it
// stops making progress: then it is killed). Flushes stdout and stderr first, so that what this
// process printed comes before what the child prints.
ProcessEnd run_child_process(const std::string& program, const std::vector<std::string>& args,
                             const ProgressWatch& watch = {});

// Runs `body` in a copy of this process (fork) and waits for it; the copy exits with body's
// return value, through _exit (no destructor or atexit handler of this process runs twice).
// Flushes stdout and stderr first, as above.
ProcessEnd run_forked(const std::function<int()>& body, const ProgressWatch& watch = {});

// This process's executable (/proc/self/exe), to start another of it.
std::string this_executable();

}  // namespace kvc::runner
