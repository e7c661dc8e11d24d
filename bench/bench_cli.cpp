// bench_cli.cpp: the kvconform-bench command line (see bench_cli.h).
#include "bench_cli.h"

#include <benchmark/benchmark.h>

#include <iostream>

#include "oracle_benchmarks.h"

#if KVC_BENCH_GPU
#include "gpu_benchmarks.h"
#include "testkit/device/kernel_library.h"
#endif

namespace kvc::bench {

BenchCommand::BenchCommand(CLI::App& cmd) : cmd_(&cmd) {
  BenchConfig& config = config_;
  cmd.footer(
      "Every other argument goes to Google Benchmark: --benchmark_filter=REGEX, "
      "--benchmark_out=FILE --benchmark_out_format=json, --benchmark_list_tests=true, ... "
      "GPU rows: gpu/<op>/<format>[/hp:H]/tokens:N/<cold|hot|graph>[/against]; oracle rows: oracle/...");
  cmd.allow_extras();
  cmd.add_option(
      "--kernels", config.kernels,
      "kernel library (.so implementing kvc/kernel_abi.h) to time; default: $KVC_KERNELS when set, else ours "
      "('builtin' forces ours)");
  cmd.add_option("--against", config.against, "a second kernel library, timed side by side with --kernels");
  // At most 100: all timed runs are enqueued before the device starts them (gpu_timer.h), and
  // the device's launch queue holds about a thousand entries (a run is up to five).
  cmd.add_option("--runs", config.plan.runs, "timed runs per case (median, min and max are reported)")
      ->check(CLI::Range(20, 100))
      ->capture_default_str();
  cmd.add_option("--warmup", config.plan.warmup, "untimed runs before timing")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd.add_option("--graph-calls", config.plan.graph_calls, "calls captured per CUDA graph in graph mode")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd.add_option("--tokens", config.tokens, "token counts (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24))
      ->capture_default_str();
  cmd.add_option("--formats", formats_, "record formats: packed584, packed528, fp8_512, bf16_512 (default all)")
      ->delimiter(',');
  cmd.add_option("--heads", config.heads, "query head counts of the legacy op (Hp = H)")
      ->delimiter(',')
      ->check(CLI::IsMember({8, 16, 32, 64, 128}))
      ->capture_default_str();
  cmd.add_flag("--dense-pages", config.dense_pages, "dense pages instead of the upstream test's padded page stride");
  cmd.add_option("--oracle-tokens", config.oracle_tokens, "tokens per oracle case")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 22))
      ->capture_default_str();
  cmd.add_option("--seed", config.seed, "seed of the random inputs")->capture_default_str();
}

int BenchCommand::execute(const std::string& program) {
  BenchConfig& config = config_;
  if (!formats_.empty()) {
    config.formats.clear();
    for (const std::string& name : formats_) {
      bool found = false;
      for (const RecordLayout& l : kRecordLayouts) {
        if (l.name == name) {
          config.formats.push_back(l.format);
          found = true;
        }
      }
      if (!found) {
        std::cerr << program << ": unknown format '" << name << "' (packed584, packed528, fp8_512, bf16_512)\n";
        return 2;
      }
    }
  }
  const std::vector<std::string> rest = cmd_->remaining();
  std::vector<std::string> benchmark_args = {program};
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

  register_oracle_benchmarks(config);

#if KVC_BENCH_GPU
  std::vector<testkit::KernelLibrary> libraries;
  try {
    if (config.kernels.empty())
      libraries.push_back(testkit::KernelLibrary::from_environment());
    else if (config.kernels == "builtin")
      libraries.push_back(testkit::KernelLibrary::builtin());
    else
      libraries.push_back(testkit::KernelLibrary::open(config.kernels));
    if (!config.against.empty())
      libraries.push_back(config.against == "builtin" ? testkit::KernelLibrary::builtin()
                                                      : testkit::KernelLibrary::open(config.against));
  } catch (const testkit::KernelLibraryError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  }
  benchmark::AddCustomContext("kvc_kernels", libraries[0].describe());
  if (libraries.size() > 1) benchmark::AddCustomContext("kvc_against", libraries[1].describe());
  benchmark::AddCustomContext("kvc_device", device_description());
  const auto session = register_gpu_benchmarks(config, libraries);
#else
  if (!config.kernels.empty() || !config.against.empty()) {
    std::cerr << program << ": built without CUDA: --kernels and --against need the GPU benchmarks\n";
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
  print_gpu_summary(*session, stdout_is_console ? std::cout : std::cerr);
#endif
  benchmark::Shutdown();
  return 0;
}

}  // namespace kvc::bench
