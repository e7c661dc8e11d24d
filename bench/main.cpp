// main.cpp: kvconform-bench, one command for the whole performance picture.
//
//   kvconform-bench [--kernels lib.so] [--against other.so] [--tokens 1,512,...] [--runs 30]
//                   [--benchmark_out=bench.json --benchmark_out_format=json] [--benchmark_filter=...]
//
// The command line is defined once (bench_cli.h) and shared with `kvconform bench`. GPU cases
// (when built with CUDA) time a kernel library through the C kernel ABI, ours by default; oracle
// cases measure the CPU reference.
#include <CLI/CLI.hpp>

#include "bench_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"kvconform-bench: KV-cache insertion kernels (through the C kernel ABI) and the CPU oracle"};
  kvc::bench::BenchCommand command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return command.execute(argv[0]);
}
