// kvconform_fuzz_main.cpp: the campaign command, kvconform-fuzz.
//
//   kvconform-fuzz run [--backend oracle|device] [--kernels LIB.so] [--profile SPEC] [--seconds 60]
//                      [--seed 1] [--cases 10] [--fixed-batch] [--rounds N] [--runs N] [--max-cases N]
//                      [--max-size 100] [--max-tokens N] [--max-legacy-tokens N]
//                      [--property NAME ...] [--corpus DIR] [--mutation NAME] [--stop-on-failure]
//                      [--json FILE]
//   kvconform-fuzz replay [--backend oracle|device] [--kernels LIB.so] FILE
//   kvconform-fuzz summarize SEGMENT.json ... [--json FILE]
//   kvconform-fuzz list
//
// The commands are defined once (fuzz_cli.h) and shared with `kvconform fuzz`. Exit status (run,
// summarize): 0 passed with full coverage, 1 a property failed, 2 usage, file or backend errors,
// 3 no failure but a coverage gap. replay: 0 passes, 1 fails, 2 cannot replay.
#include <CLI/CLI.hpp>

#include "kvc/fuzz/campaign_summary.h"
#include "kvc/fuzz/fuzz_cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kvconform-fuzz: property campaigns against the kvconform oracle, mutants of it, or a kernel "
      "library on the GPU"};
  app.require_subcommand(1);
  app.footer(kvc::fuzz::kFuzzExitStatusText);
  kvc::fuzz::FuzzCommands commands(app, argv[0]);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kvc::fuzz::kExitPassed : kvc::fuzz::kExitUsage;
  }
  return commands.execute().value_or(kvc::fuzz::kExitUsage);
}
