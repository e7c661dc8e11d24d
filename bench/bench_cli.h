// bench_cli.h: the kvconform-bench command line, shared by kvconform-bench and `kvconform bench`.
//
//   [--kernels lib.so] [--against other.so] [--tokens 1,512,...] [--formats f,...] [--heads 8,64]
//   [--runs 30] [--warmup N] [--graph-calls N] [--dense-pages] [--oracle-tokens N] [--seed S]
//   [--benchmark_out=bench.json --benchmark_out_format=json] [--benchmark_filter=...]
//
// Our flags are parsed by CLI11; every other argument (Google Benchmark's --benchmark_* flags) is
// passed on to benchmark::Initialize. GPU cases (when built with CUDA) time a kernel library
// through the C kernel ABI, ours by default; oracle cases measure the CPU reference.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_config.h"

namespace kvc::bench {

class BenchCommand {
 public:
  // Adds the flags to `cmd` (the program's app, or its `bench` subcommand) and lets every other
  // argument through to Google Benchmark.
  explicit BenchCommand(CLI::App& cmd);

  // After parsing: checks the formats, registers the benchmarks, runs them with the arguments
  // CLI11 left over, and prints the GPU summary. `program` is argv[0] for Google Benchmark.
  // Returns the exit status (2 for a bad format, flag or kernel library).
  int execute(const std::string& program);

 private:
  CLI::App* cmd_;
  BenchConfig config_;
  std::vector<std::string> formats_;
};

}  // namespace kvc::bench
