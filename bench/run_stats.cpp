// run_stats.cpp: summary of timed runs (see run_stats.h).
#include "run_stats.h"

#include <algorithm>
#include <numeric>

namespace kvc::bench {

std::string_view mode_name(TimingMode m) {
  switch (m) {
    case TimingMode::kCold: return "cold";
    case TimingMode::kHot: return "hot";
    case TimingMode::kGraph: return "graph";
  }
  return "?";
}

RunStats summarize(std::vector<double> seconds) {
  RunStats s;
  s.runs = static_cast<int>(seconds.size());
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  s.median = n % 2 == 1 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  s.min = seconds.front();
  s.max = seconds.back();
  s.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(n);
  return s;
}

}  // namespace kvc::bench
