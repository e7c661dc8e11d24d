// probe_process.cpp: spawning and watching the probe's children (see probe_process.h).
#include "probe_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace kvc::runner {
namespace {

// How often run_child looks at its child: the calls take milliseconds, CUDA's start longer.
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

ChildProcess::ChildProcess(const std::vector<std::string>& argv, std::string log_path, double limit_seconds)
    : log_path_(std::move(log_path)), limit_seconds_(limit_seconds), start_(std::chrono::steady_clock::now()) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
  if (!done_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  std::remove(log_path_.c_str());
}

double ChildProcess::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool ChildProcess::finished() {
  if (done_) return true;
  int status = 0;
  const pid_t ended = waitpid(pid_, &status, WNOHANG);
  if (ended == pid_) {
    collect(status, false);
  } else if (ended < 0 && errno != EINTR) {
    throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  } else if (seconds() >= limit_seconds_) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    collect(status, true);
  }
  return done_;
}

void ChildProcess::collect(int wait_status, bool timed_out) {
  done_ = true;
  testkit::ChildOutcome& o = run_.outcome;
  if (timed_out) {
    o.end = testkit::ChildEnd::kTimedOut;
    o.limit_seconds = limit_seconds_;
  } else if (WIFSIGNALED(wait_status)) {
    o.end = testkit::ChildEnd::kSignaled;
    o.signal = WTERMSIG(wait_status);
  } else {
    o.end = testkit::ChildEnd::kExited;
    o.exit_code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  }
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  run_.output = text.str();
  o.reported = testkit::find_probe_result(run_.output, &run_.observed);
  o.last_line = last_line(run_.output);
}

ChildRun run_child(const std::vector<std::string>& argv, const std::string& log_path, double limit_seconds) {
  ChildProcess child(argv, log_path, limit_seconds);
  while (!child.finished()) std::this_thread::sleep_for(kPollInterval);
  return child.result();
}

void run_children_in_order(const std::vector<std::vector<std::string>>& commands, const std::string& log_prefix,
                           int jobs, double limit_seconds, const ChildDone& done) {
  const std::size_t n = commands.size();
  std::vector<std::unique_ptr<ChildProcess>> running(n);
  std::vector<bool> ended(n, false);
  std::vector<double> seconds(n, 0.0);
  std::size_t next = 0, reported = 0, active = 0;
  while (reported < n) {
    // Start what the slots allow; an empty command takes none and is ended at once.
    for (; next < n && (active < static_cast<std::size_t>(jobs) || commands[next].empty()); ++next) {
      if (commands[next].empty()) {
        ended[next] = true;
        continue;
      }
      running[next] =
          std::make_unique<ChildProcess>(commands[next], log_prefix + std::to_string(next) + ".log", limit_seconds);
      ++active;
    }
    bool progressed = false;
    for (std::size_t i = reported; i < next; ++i) {
      if (ended[i] || !running[i]->finished()) continue;
      seconds[i] = running[i]->seconds();
      ended[i] = true;
      --active;
      progressed = true;
    }
    for (; reported < next && ended[reported]; ++reported) {
      done(reported, running[reported] ? &running[reported]->result() : nullptr, seconds[reported]);
      running[reported].reset();
    }
    if (!progressed) std::this_thread::sleep_for(kPollInterval);
  }
}

std::string own_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot read /proc/self/exe: ") + std::strerror(errno));
  return std::string(path, static_cast<std::size_t>(n));
}

}  // namespace kvc::runner
