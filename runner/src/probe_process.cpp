// probe_process.cpp: spawning and waiting for the probe's children (see probe_process.h).
#include "probe_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "testkit/probe/probe_observation.h"

extern char** environ;

namespace kvc::runner {
namespace {

// How often a running child is looked at: the calls take milliseconds, CUDA's start most of a second.
constexpr std::chrono::milliseconds kPollInterval{5};

// The last non-empty line that is not the result line: an abort message, a driver's complaint.
std::string last_line(const std::string& output) {
  std::istringstream lines(output);
  std::string line, last;
  while (std::getline(lines, line))
    if (!line.empty() && line.rfind(testkit::kProbeResultMarker, 0) != 0) last = line;
  return last;
}

}  // namespace

std::string own_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot read /proc/self/exe: ") + std::strerror(errno));
  return std::string(path, static_cast<std::size_t>(n));
}

ChildRun run_child(const std::vector<std::string>& argv, const std::string& log_path, double limit_seconds) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));

  ChildRun run;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= limit_seconds) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      run.outcome.end = testkit::ChildEnd::kTimedOut;
      run.outcome.limit_seconds = limit_seconds;
      break;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  if (run.outcome.end != testkit::ChildEnd::kTimedOut) {
    if (WIFSIGNALED(status)) {
      run.outcome.end = testkit::ChildEnd::kSignaled;
      run.outcome.signal = WTERMSIG(status);
    } else {
      run.outcome.end = testkit::ChildEnd::kExited;
      run.outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
  }
  std::ifstream in(log_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  run.output = text.str();
  run.outcome.reported = testkit::find_probe_result(run.output, &run.observed);
  run.outcome.last_line = last_line(run.output);
  return run;
}

}  // namespace kvc::runner
