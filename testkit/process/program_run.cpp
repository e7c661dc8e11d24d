// program_run.cpp: the shell call behind the command-line tests (see program_run.h).
#include "testkit/process/program_run.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kvc::testkit {

ProgramRun run_program(const std::string& binary, const std::string& args, const std::string& log_path,
                       const std::string& env) {
  ProgramRun r;
  r.command = env + " '" + binary + "' " + args + " > '" + log_path + "' 2>&1";
  const int raw = std::system(r.command.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(log_path);
  std::ostringstream s;
  s << in.rdbuf();
  r.output = s.str();
  return r;
}

void print_program_run(const ProgramRun& r, std::size_t max_output_chars) {
  std::printf("$ %s\n-> exit %d\n%s\n", r.command.c_str(), r.status, r.output.substr(0, max_output_chars).c_str());
}

}  // namespace kvc::testkit
