// fuzz_cli.h: the campaign commands (run, replay, summarize, list) as CLI11 subcommands.
//
// One definition serves two programs: kvconform-fuzz (the commands at its top level) and the
// kvconform runner (under `kvconform fuzz`, with `kvconform replay FILE` as a second way to
// replay). The options, messages and exit statuses are the same in both:
//
//   run [--backend oracle|device] [--kernels LIB.so] [--profile SPEC] [--seconds 60] [--seed 1]
//       [--cases 10] [--fixed-batch] [--rounds N] [--runs N] [--max-cases N] [--max-size 100]
//       [--max-tokens N] [--max-legacy-tokens N] [--property NAME ...] [--corpus DIR]
//       [--mutation NAME] [--stop-on-failure] [--json FILE]
//   replay [--backend oracle|device] [--kernels LIB.so] FILE
//   summarize SEGMENT.json ... [--json FILE]
//   list
//
// Exit status (run, summarize): 0 passed with full coverage, 1 a property failed, 2 usage, file or
// backend errors, 3 no failure but a coverage gap. replay: 0 passes, 1 fails, 2 cannot replay.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace kvc::fuzz {

// The footer both programs print under --help.
extern const char* const kFuzzExitStatusText;

class FuzzCommands {
 public:
  // Adds run, replay, summarize and list under `parent`. `program` is how reproduce lines name
  // the command that owns them ("kvconform-fuzz", "kvconform fuzz").
  FuzzCommands(CLI::App& parent, std::string program);
  ~FuzzCommands();
  FuzzCommands(const FuzzCommands&) = delete;
  FuzzCommands& operator=(const FuzzCommands&) = delete;

  // A second `replay` subcommand, with the same options, under another parent.
  void add_replay(CLI::App& parent);

  // After parsing: runs the command that was given and returns its exit status; nothing when the
  // command line selected none of them. Exceptions are reported on stderr as usage errors (2).
  std::optional<int> execute();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kvc::fuzz
