// child_process.cpp: see child_process.h.
#include "child_process.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace kvc::runner {
namespace {

// The size of `file`, or -1 while it does not exist.
std::intmax_t size_of(const std::string& file) {
  std::error_code error;
  const std::uintmax_t n = std::filesystem::file_size(file, error);
  return error ? -1 : static_cast<std::intmax_t>(n);
}

// Polls (every 50 ms: a check takes far longer, and the run's wall time is not this loop's) until
// the child ends or `watch.file` has not grown for `watch.seconds`; then kills it. Returns the
// child's status as waitpid gives it, or sets *timed_out.
bool wait_watching(pid_t pid, const ProgressWatch& watch, int* status, bool* timed_out) {
  using Clock = std::chrono::steady_clock;
  std::intmax_t last_size = size_of(watch.file);
  Clock::time_point last_progress = Clock::now();
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    if (const std::intmax_t size = size_of(watch.file); size != last_size) {
      last_size = size;
      last_progress = Clock::now();
    } else if (std::chrono::duration<double>(Clock::now() - last_progress).count() > watch.seconds) {
      kill(pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      *timed_out = true;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

ProcessEnd wait_for(pid_t pid, const ProgressWatch& watch) {
  ProcessEnd end;
  int status = 0;
  if (watch.seconds > 0) {
    bool timed_out = false;
    if (!wait_watching(pid, watch, &status, &timed_out)) {
      end.error = std::string("waitpid: ") + std::strerror(errno);
      return end;
    }
    if (timed_out) {
      end.kind = ProcessEndKind::kTimedOut;
      end.code = static_cast<int>(std::ceil(watch.seconds));
      return end;
    }
  } else {
    while (waitpid(pid, &status, 0) < 0) {
      if (errno == EINTR) continue;
      end.error = std::string("waitpid: ") + std::strerror(errno);
      return end;
    }
  }
  if (WIFSIGNALED(status)) {
    end.kind = ProcessEndKind::kSignalled;
    end.code = WTERMSIG(status);
  } else {
    end.kind = ProcessEndKind::kExited;
    end.code = WEXITSTATUS(status);
  }
  return end;
}

}  // namespace

std::string ProcessEnd::describe() const {
  switch (kind) {
    case ProcessEndKind::kExited: return "exit status " + std::to_string(code);
    case ProcessEndKind::kSignalled: {
      const char* name = strsignal(code);
      return "killed by signal " + std::to_string(code) + ": " + (name ? name : "unknown");
    }
    case ProcessEndKind::kNotStarted: return "not started: " + error;
    case ProcessEndKind::kTimedOut:
      return "killed after " + std::to_string(code) + " s without progress (--check-timeout " + std::to_string(code) +
             ")";
  }
  return "?";
}

ProcessEnd run_child_process(const std::string& program, const std::vector<std::string>& args,
                             const ProgressWatch& watch) {
  std::vector<std::string> owned;
  owned.reserve(args.size() + 1);
  owned.push_back(program);
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = 0;
  if (const int e = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ); e != 0) {
    ProcessEnd end;
    end.error = program + ": " + std::strerror(e);
    return end;
  }
  return wait_for(pid, watch);
}

ProcessEnd run_forked(const std::function<int()>& body, const ProgressWatch& watch) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    ProcessEnd end;
    end.error = std::string("fork: ") + std::strerror(errno);
    return end;
  }
  if (pid == 0) {
    const int rc = body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc);
  }
  return wait_for(pid, watch);
}

std::string this_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.string();
}

}  // namespace kvc::runner
