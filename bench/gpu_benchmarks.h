// gpu_benchmarks.h: the GPU cases of kvconform-bench, registered with Google Benchmark.
//
// Per token count and format: the copy roofline, the KV-only insert, the legacy ("dummy query")
// insert per head count, kv_norm fused in front of the insert and standalone kv_norm followed by
// the insert, each cold and hot; up to kGraphMaxTokens also under CUDA-graph replay. Each case is
// timed for every library given (--kernels, then --against), one row each, adjacent.
//
// Row names: gpu/<op>/<format>[/hp:<H>]/tokens:<N>/<mode>[/against]/iterations:<runs>/manual_time
// (Google Benchmark appends the last two). Counters:
// tokens, bytes (moved per call, bytes_moved.h), median_us, min_us, max_us, GBps (bytes over the
// median), copy_us and copy_ratio (copy time over the op's: the fraction of copy bandwidth),
// kv_only_speedup on legacy rows (legacy time over KV-only time: the DSpark claim),
// fused_speedup on unfused rows, vs_kernels on --against rows (its time over --kernels' time).
// The Google Benchmark time of a row is the mean of its runs; quote the median.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "bench_config.h"
#include "testkit/device/kernel_library.h"

namespace kvc::bench {

class GpuSession;

// Registers the GPU cases; the returned session holds the device state (created on the first
// case that runs, so a machine without a GPU only reports each case as skipped).
std::shared_ptr<GpuSession> register_gpu_benchmarks(const BenchConfig& config,
                                                    const std::vector<testkit::KernelLibrary>& libraries);

// "NVIDIA H200, 132 SMs, L2 60.0 MiB, 139.8 GiB, driver 13.0, runtime 13.0", or why no device
// can be used: recorded in the JSON context.
std::string device_description();

// After the run: one line per case with the libraries' median times side by side.
void print_gpu_summary(const GpuSession& session, std::ostream& out);

}  // namespace kvc::bench
