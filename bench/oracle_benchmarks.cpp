// oracle_benchmarks.cpp: oracle throughput rows (see oracle_benchmarks.h).
#include "oracle_benchmarks.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <thread>

#include "bench_cases.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/options.h"
#include "testkit/backends/backing.h"

namespace kvc::bench {
namespace {

struct OracleCase {
  InsertCase c;
  InsertOutputs out;
};

}  // namespace

void register_oracle_benchmarks(const BenchConfig& config) {
  const BenchInputs inputs = make_bench_inputs(config.oracle_tokens, config.seed);
  // One thread, and every hardware thread (named explicitly, so KVC_ORACLE_THREADS cannot change
  // what a row means).
  std::vector<int> thread_counts = {1};
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  if (hardware > 1) thread_counts.push_back(hardware);

  for (RecordFormat f : config.formats) {
    auto oc = std::make_shared<OracleCase>();
    oc->c = bench_kv_only_case(inputs, f, !config.dense_pages, false);
    oc->out = testkit::make_outputs(oc->c);
    for (int threads : thread_counts) {
      const std::string name = "oracle/kv_only/" + std::string(layout_of(f).name) +
                               "/tokens:" + std::to_string(config.oracle_tokens) +
                               "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [oc, threads](benchmark::State& state) {
                                     oracle::OracleOptions options;
                                     options.threads = threads;
                                     for (auto _ : state) {
                                       const Status s = oracle::kv_only_insert(oc->c, oc->out, options);
                                       if (!s.ok()) {
                                         state.SkipWithError(s.ToString().c_str());
                                         break;
                                       }
                                       benchmark::DoNotOptimize(oc->out.cache.data());
                                     }
                                     const double tokens = static_cast<double>(oc->c.num_inserted());
                                     state.counters["tokens"] = tokens;
                                     state.counters["oracle_threads"] = threads;
                                     state.counters["tokens_per_second"] =
                                         benchmark::Counter(tokens, benchmark::Counter::kIsIterationInvariantRate);
                                   })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace kvc::bench
