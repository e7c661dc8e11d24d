// stopwatch.h: seconds since construction on the monotonic clock, for check timings.
#pragma once

#include <chrono>

namespace kvc::runner {

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace kvc::runner
