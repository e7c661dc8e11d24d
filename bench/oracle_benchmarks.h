// oracle_benchmarks.h: the CPU oracle's throughput (tokens/s per format) in kvconform-bench.
//
// Rows oracle/kv_only/<format>/tokens:<N>/threads:<T>, counter tokens_per_second, for T = 1 and
// T = every hardware thread (oracle::OracleOptions::threads). They need no GPU.
#pragma once

#include "bench_config.h"

namespace kvc::bench {

void register_oracle_benchmarks(const BenchConfig& config);

}  // namespace kvc::bench
