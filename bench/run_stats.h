// run_stats.h: what the benchmarks report about a set of timed runs, and how runs are timed.
//
// The median is the number to quote (robust to the odd slow run: a clock change, a neighbour on
// the host); min and max show the spread, so a difference between two kernels smaller than it
// reads as noise.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kvc::bench {

// cold: the L2 is flushed (a memset of several times its size, not timed) before every run, so
//       inputs come from HBM as in a serving step whose other layers evicted them;
// hot:  runs are launched back to back on the same inputs: small cases then run out of L2;
// graph: `graph_calls` calls captured in one CUDA graph, each run one replay, time per call.
enum class TimingMode : std::uint8_t { kCold, kHot, kGraph };
std::string_view mode_name(TimingMode m);

struct TimingPlan {
  int warmup = 5;         // untimed runs first: module load, first-touch, clocks ramping up
  int runs = 30;          // timed runs (the issue asks for at least 20)
  int graph_calls = 100;  // calls captured per graph in graph mode
};

struct RunStats {
  int runs = 0;
  double median = 0, min = 0, max = 0, mean = 0;  // seconds per call
};

// Median (mean of the two middle values for an even count), min, max, mean. Empty input: zeros.
RunStats summarize(std::vector<double> seconds);

}  // namespace kvc::bench
