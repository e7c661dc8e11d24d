// main.cpp: kvconform, one command for a kernel engineer's question "does my kernel conform, and
// if not, where?".
//
//   kvconform run [--kernels lib.so] [--ops ...] [--formats ...] [--max-tokens N] [--profile SPEC]
//                 [--json FILE] [--junit FILE] [--cpu-only]            the conformance run
//   kvconform decode [FILE] [...]                                      a cache page, decoded
//   kvconform probe [--kernels lib.so] [--ops ...] [--rules ...] [--json FILE] [--seed N]
//                                                                      what a library does with bad input
//   kvconform fuzz run|replay|summarize|list [...]                     property campaigns
//   kvconform replay FILE                                              replay a campaign's case file
//   kvconform bench [...]                                              benchmarks (Google Benchmark)
//
// fuzz, replay and bench are the commands of kvconform-fuzz and kvconform-bench, defined once
// (fuzz/fuzz_cli.h, bench/bench_cli.h); each is built when its dependency (RapidCheck, Google
// Benchmark) was found, and otherwise says so.
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "decode_command.h"
#include "probe_command.h"
#include "run_command.h"
#include "run_report.h"

#if KVC_RUNNER_HAVE_FUZZ
#include "kvc/fuzz/fuzz_cli.h"
#endif
#if KVC_RUNNER_HAVE_BENCH
#include "bench_cli.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"kvconform: conformance of DeepSeek-V4 KV-cache insertion kernels against the kvconform contract"};
  app.require_subcommand(1);
  app.footer(
      "kvconform run exit status: 0 every check passed (and kernel conformance ran, or --cpu-only); 1 a check "
      "failed; 2 usage, a kernel library that does not load, an unwritable report; 3 no failure, but kernel "
      "conformance was SKIPPED (no GPU or no device backend) and --cpu-only was not given; 4 NOTHING CHECKED: the "
      "kernel suites compared no byte the library wrote; 5 INCOMPLETE: an op the library exports and declares "
      "supported compared no byte.");
  kvc::runner::RunCommand run(app);
  kvc::runner::DecodeCommand decode(app);
  kvc::runner::ProbeCommand probe(app);
  const std::string program = std::string(argv[0]);
#if KVC_RUNNER_HAVE_FUZZ
  CLI::App* fuzz = app.add_subcommand("fuzz", "property campaigns (the kvconform-fuzz commands)");
  fuzz->require_subcommand(1);
  fuzz->footer(kvc::fuzz::kFuzzExitStatusText);
  kvc::fuzz::FuzzCommands fuzz_commands(*fuzz, program + " fuzz");
  fuzz_commands.add_replay(app);
#else
  app.add_subcommand("fuzz", "property campaigns: NOT BUILT (RapidCheck was not found)")->allow_extras();
  app.add_subcommand("replay", "replay a case file: NOT BUILT (RapidCheck was not found)")->allow_extras();
#endif
#if KVC_RUNNER_HAVE_BENCH
  CLI::App* bench_cmd = app.add_subcommand("bench", "benchmarks (the kvconform-bench command)");
  kvc::bench::BenchCommand bench(*bench_cmd);
#else
  app.add_subcommand("bench", "benchmarks: NOT BUILT (Google Benchmark was not found)")->allow_extras();
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kvc::runner::kRunUsage;
  }
  if (run.selected()) return run.execute();
  if (decode.selected()) return decode.execute();
  if (probe.selected()) return probe.execute();
#if KVC_RUNNER_HAVE_FUZZ
  if (const std::optional<int> rc = fuzz_commands.execute()) return *rc;
#endif
#if KVC_RUNNER_HAVE_BENCH
  if (bench_cmd->parsed()) return bench.execute(program + " bench");
#endif
  std::fprintf(stderr, "kvconform: this command was not built (see kvconform --help)\n");
  return kvc::runner::kRunUsage;
}
