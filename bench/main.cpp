// main.cpp: kvconform-bench, one command for the whole performance picture.
//
//   kvconform-bench [--kernels lib.so] [--against other.so] [--tokens 1,512,...] [--runs 30]
//                   [--benchmark_out=bench.json --benchmark_out_format=json] [--benchmark_filter=...]
//
// Our flags are parsed here; every other argument (Google Benchmark's --benchmark_* flags) is
// passed on to benchmark::Initialize. GPU cases (when built with CUDA) time a kernel library
// through the C kernel ABI, ours by default; oracle cases measure the CPU reference.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "bench_config.h"
#include "oracle_benchmarks.h"

#if KVC_BENCH_GPU
#include "gpu_benchmarks.h"
#include "kvc/testkit/kernel_library.h"
#endif

namespace {

using kvc::bench::BenchConfig;

// Parses our flags into `config`; the arguments left for Google Benchmark go to `rest`.
// Returns an exit code when the program should stop (--help, a bad flag), else -1.
int parse_flags(int argc, char** argv, BenchConfig& config, std::vector<std::string>& rest) {
  CLI::App app{"kvconform-bench: KV-cache insertion kernels (through the C kernel ABI) and the CPU oracle"};
  app.footer(
      "Every other argument goes to Google Benchmark: --benchmark_filter=REGEX, "
      "--benchmark_out=FILE --benchmark_out_format=json, --benchmark_list_tests=true, ... "
      "GPU rows: gpu/<op>/<format>[/hp:H]/tokens:N/<cold|hot|graph>[/against]; oracle rows: oracle/...");
  app.allow_extras();
  app.add_option(
      "--kernels", config.kernels,
      "kernel library (.so implementing kvc/kernel_abi.h) to time; default: $KVC_KERNELS when set, else ours "
      "('builtin' forces ours)");
  app.add_option("--against", config.against, "a second kernel library, timed side by side with --kernels");
  // At most 100: all timed runs are enqueued before the device starts them (gpu_timer.h), and
  // the device's launch queue holds about a thousand entries (a run is up to five).
  app.add_option("--runs", config.plan.runs, "timed runs per case (median, min and max are reported)")
      ->check(CLI::Range(20, 100))
      ->capture_default_str();
  app.add_option("--warmup", config.plan.warmup, "untimed runs before timing")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--graph-calls", config.plan.graph_calls, "calls captured per CUDA graph in graph mode")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--tokens", config.tokens, "token counts (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24))
      ->capture_default_str();
  std::vector<std::string> formats;
  app.add_option("--formats", formats, "record formats: packed584, packed528, fp8_512, bf16_512 (default all)")
      ->delimiter(',');
  app.add_option("--heads", config.heads, "query head counts of the legacy op (Hp = H)")
      ->delimiter(',')
      ->check(CLI::IsMember({8, 16, 32, 64, 128}))
      ->capture_default_str();
  app.add_flag("--dense-pages", config.dense_pages, "dense pages instead of the upstream test's padded page stride");
  app.add_option("--oracle-tokens", config.oracle_tokens, "tokens per oracle case")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 22))
      ->capture_default_str();
  app.add_option("--seed", config.seed, "seed of the random inputs")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!formats.empty()) {
    config.formats.clear();
    for (const std::string& name : formats) {
      bool found = false;
      for (const kvc::RecordLayout& l : kvc::kRecordLayouts) {
        if (l.name == name) {
          config.formats.push_back(l.format);
          found = true;
        }
      }
      if (!found) {
        std::cerr << "kvconform-bench: unknown format '" << name << "' (packed584, packed528, fp8_512, bf16_512)\n";
        return 2;
      }
    }
  }
  rest = app.remaining();
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  BenchConfig config;
  std::vector<std::string> rest;
  if (const int code = parse_flags(argc, argv, config, rest); code >= 0) return code;

  std::vector<std::string> benchmark_args = {argv[0]};
  benchmark_args.insert(benchmark_args.end(), rest.begin(), rest.end());
  std::vector<char*> benchmark_argv;
  for (std::string& a : benchmark_args) benchmark_argv.push_back(a.data());
  int benchmark_argc = static_cast<int>(benchmark_argv.size());
  benchmark::Initialize(&benchmark_argc, benchmark_argv.data());
  if (benchmark::ReportUnrecognizedArguments(benchmark_argc, benchmark_argv.data())) return 2;

  benchmark::AddCustomContext("kvc_runs", std::to_string(config.plan.runs));
  benchmark::AddCustomContext("kvc_warmup", std::to_string(config.plan.warmup));
  benchmark::AddCustomContext("kvc_graph_calls", std::to_string(config.plan.graph_calls));
  benchmark::AddCustomContext("kvc_pages", config.dense_pages ? "dense" : "padded (upstream page stride)");
  benchmark::AddCustomContext("kvc_seed", std::to_string(config.seed));

  kvc::bench::register_oracle_benchmarks(config);

#if KVC_BENCH_GPU
  std::vector<kvc::testkit::KernelLibrary> libraries;
  try {
    if (config.kernels.empty())
      libraries.push_back(kvc::testkit::KernelLibrary::from_environment());
    else if (config.kernels == "builtin")
      libraries.push_back(kvc::testkit::KernelLibrary::builtin());
    else
      libraries.push_back(kvc::testkit::KernelLibrary::open(config.kernels));
    if (!config.against.empty())
      libraries.push_back(config.against == "builtin" ? kvc::testkit::KernelLibrary::builtin()
                                                      : kvc::testkit::KernelLibrary::open(config.against));
  } catch (const kvc::testkit::KernelLibraryError& e) {
    std::cerr << "kvconform-bench: " << e.what() << "\n";
    return 2;
  }
  benchmark::AddCustomContext("kvc_kernels", libraries[0].describe());
  if (libraries.size() > 1) benchmark::AddCustomContext("kvc_against", libraries[1].describe());
  benchmark::AddCustomContext("kvc_device", kvc::bench::device_description());
  const auto session = kvc::bench::register_gpu_benchmarks(config, libraries);
#else
  if (!config.kernels.empty() || !config.against.empty()) {
    std::cerr << "kvconform-bench: built without CUDA: --kernels and --against need the GPU benchmarks\n";
    return 2;
  }
  benchmark::AddCustomContext("kvc_device", "none: built without CUDA, GPU cases not registered");
#endif

  benchmark::RunSpecifiedBenchmarks();
#if KVC_BENCH_GPU
  // The summary follows the console table; when stdout carries JSON or CSV it goes to stderr.
  bool stdout_is_console = true;
  for (const std::string& a : rest)
    if (a.rfind("--benchmark_format=", 0) == 0 && a != "--benchmark_format=console") stdout_is_console = false;
  kvc::bench::print_gpu_summary(*session, stdout_is_console ? std::cout : std::cerr);
#endif
  benchmark::Shutdown();
  return 0;
}
