// gpu_timer.h: device time of an enqueued call, with CUDA events, in the three timing modes.
//
// Every timed region is bracketed by two events on the benchmark's stream, so only device time is
// counted. The timed runs are queued behind a gate (a host function that waits until everything
// is enqueued), so the device runs them back to back and the host's launch cost (argument
// checking in the library, the launch itself) never shows up as idle device time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "run_stats.h"

namespace kvc::bench {

// Enqueues one call of the op on `stream` (a cudaStream_t); throws on a failed launch.
using Launch = std::function<void(void* stream)>;

class GpuTimer {
 public:
  GpuTimer();  // creates the stream and reads the L2 size; throws testkit::DeviceError
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  void* stream() const { return stream_; }
  std::int64_t l2_bytes() const { return l2_bytes_; }
  std::int64_t flush_bytes() const;

  // Seconds per call of `plan.runs` timed runs (after plan.warmup untimed ones). In graph mode
  // each run is one replay of plan.graph_calls captured calls, divided by that count.
  std::vector<double> time(TimingMode mode, const TimingPlan& plan, const Launch& launch);

 private:
  void flush_l2(int run);

  void* stream_ = nullptr;
  std::int64_t l2_bytes_ = 0;
  void* flush_buffer_ = nullptr;  // allocated on the first cold run
};

}  // namespace kvc::bench
