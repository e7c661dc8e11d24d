// copy_roofline.h: the device-to-device copy that moves as many bytes as a case, timed once.
//
// An op that reads R bytes and writes W bytes is compared with cudaMemcpyAsync of (R + W) / 2
// bytes, which also reads and writes R + W in all: the copy is the best any kernel moving those
// bytes can do on this device, so (copy time / op time) is the fraction of the achievable
// bandwidth the op reaches. Measured in the same run, in the same timing mode, memoized by size.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "gpu_timer.h"
#include "run_stats.h"

namespace kvc::bench {

struct CopyTiming {
  std::vector<double> seconds;  // per run
  RunStats stats;
};

class CopyRoofline {
 public:
  // The copy for `bytes_moved` (read + written) in `mode`; the first request for a size times the
  // cold and hot modes together, so that a large op's buffers need not coexist with the copy's.
  const CopyTiming& timing(GpuTimer& timer, const TimingPlan& plan, std::int64_t bytes_moved, TimingMode mode);

 private:
  std::map<std::pair<std::int64_t, TimingMode>, CopyTiming> memo_;
};

}  // namespace kvc::bench
