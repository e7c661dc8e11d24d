// bench_config.h: what one kvconform-bench run measures (our flags; Google Benchmark's pass through).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "run_stats.h"

namespace kvc::bench {

// Graph replay is measured up to this size: past it a call is long enough that launch overhead,
// what a graph removes, no longer matters.
inline constexpr std::int64_t kGraphMaxTokens = 2048;

struct BenchConfig {
  std::string kernels;  // shared object to time; "" = KVC_KERNELS when set, else our kernels
  std::string against;  // second library timed side by side; "" = none
  TimingPlan plan;
  std::vector<std::int64_t> tokens = {1, 17, 512, 2048, 16384, 65536, 262144};
  std::vector<RecordFormat> formats = {kAllFormats.begin(), kAllFormats.end()};
  std::vector<std::int64_t> heads = {8, 64, 128};  // legacy op's query heads (Hp = H)
  bool dense_pages = false;                        // default: the upstream test's padded pages
  std::int64_t oracle_tokens = 16384;              // enough rows for every thread of a 16-core host
  std::uint64_t seed = 42;
};

}  // namespace kvc::bench
