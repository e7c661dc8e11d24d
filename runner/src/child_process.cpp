// child_process.cpp: see child_process.h.
#include "child_process.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace kvc::runner {
namespace {

ProcessEnd wait_for(pid_t pid) {
  ProcessEnd end;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno == EINTR) continue;
    end.error = std::string("waitpid: ") + std::strerror(errno);
    return end;
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
  }
  return "?";
}

ProcessEnd run_child_process(const std::string& program, const std::vector<std::string>& args) {
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
  return wait_for(pid);
}

ProcessEnd run_forked(const std::function<int()>& body) {
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
  return wait_for(pid);
}

std::string this_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.string();
}

}  // namespace kvc::runner
