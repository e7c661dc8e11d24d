// gpu_timer.cpp: event timing, L2 flush, graph capture and the launch gate (see gpu_timer.h).
#include "gpu_timer.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "testkit/device/device_buffers.h"

namespace kvc::bench {
namespace {

using testkit::check_cuda;

// The flush buffer is this many times the L2: a memset of it leaves none of the inputs resident
// (the issue asks for more than twice the L2; the cost is a few tens of microseconds per run).
constexpr std::int64_t kFlushL2Multiple = 4;
// A library whose launch synchronizes with the device would wait forever for the gated stream
// (so would a launch queue filled up behind the gate); after this long the gate opens and the
// measurement is rejected with that diagnosis.
constexpr auto kGateTimeout = std::chrono::seconds(10);

struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> timed_out{false};
};

void CUDART_CB wait_for_gate(void* user) {
  auto* gate = static_cast<Gate*>(user);
  const auto deadline = std::chrono::steady_clock::now() + kGateTimeout;
  while (!gate->open.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) {
      gate->timed_out.store(true);
      return;
    }
    std::this_thread::yield();
  }
}

// Opens the gate and drains the stream on every exit path, so that no queued work outlives the
// gate object or the events.
class GateGuard {
 public:
  GateGuard(Gate& gate, cudaStream_t stream) : gate_(gate), stream_(stream) {}
  ~GateGuard() {
    gate_.open.store(true, std::memory_order_release);
    cudaStreamSynchronize(stream_);
  }
  GateGuard(const GateGuard&) = delete;
  GateGuard& operator=(const GateGuard&) = delete;

 private:
  Gate& gate_;
  cudaStream_t stream_;
};

class Events {
 public:
  explicit Events(int count) : events_(static_cast<std::size_t>(count), nullptr) {
    for (auto& e : events_) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~Events() {
    for (auto e : events_)
      if (e != nullptr) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](int i) const { return events_[static_cast<std::size_t>(i)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// A graph of `calls` launches, captured on `stream`; destroyed with the object.
class CapturedGraph {
 public:
  CapturedGraph(cudaStream_t stream, int calls, const Launch& launch) {
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
      for (int i = 0; i < calls; ++i) launch(stream);
    } catch (...) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream, &partial);  // leave capture mode before reporting
      if (partial != nullptr) cudaGraphDestroy(partial);
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream, &graph_), "cudaStreamEndCapture (a call was not capturable)");
    check_cuda(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
  }
  ~CapturedGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void replay(cudaStream_t stream) const { check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch"); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

GpuTimer::GpuTimer() {
  int device = 0, l2 = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2 size)");
  l2_bytes_ = l2;
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = s;
}

GpuTimer::~GpuTimer() {
  if (flush_buffer_ != nullptr) cudaFree(flush_buffer_);
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

std::int64_t GpuTimer::flush_bytes() const { return kFlushL2Multiple * l2_bytes_; }

void GpuTimer::flush_l2(int run) {
  // Allocated during the warm-up, never behind the gate: cudaMalloc may wait for the device.
  if (flush_buffer_ == nullptr)
    check_cuda(cudaMalloc(&flush_buffer_, static_cast<std::size_t>(flush_bytes())), "cudaMalloc L2 flush buffer");
  // A different byte each run, so no layer of the memory system can skip an unchanged fill.
  check_cuda(cudaMemsetAsync(flush_buffer_, run & 0xFF, static_cast<std::size_t>(flush_bytes()),
                             static_cast<cudaStream_t>(stream_)),
             "cudaMemsetAsync L2 flush");
}

std::vector<double> GpuTimer::time(TimingMode mode, const TimingPlan& plan, const Launch& launch) {
  const auto stream = static_cast<cudaStream_t>(stream_);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize before timing");

  std::unique_ptr<CapturedGraph> graph;
  if (mode == TimingMode::kGraph) graph = std::make_unique<CapturedGraph>(stream, plan.graph_calls, launch);
  const auto run_once = [&] {
    if (graph)
      graph->replay(stream);
    else
      launch(stream);
  };
  const int calls_per_run = graph ? plan.graph_calls : 1;

  for (int i = 0; i < plan.warmup; ++i) {
    if (mode == TimingMode::kCold) flush_l2(i);
    run_once();
  }
  check_cuda(cudaStreamSynchronize(stream), "warm-up runs");

  Events start(plan.runs), stop(plan.runs);
  Gate gate;
  {
    GateGuard guard(gate, stream);
    check_cuda(cudaLaunchHostFunc(stream, wait_for_gate, &gate), "cudaLaunchHostFunc (launch gate)");
    for (int i = 0; i < plan.runs; ++i) {
      if (mode == TimingMode::kCold) flush_l2(i);
      check_cuda(cudaEventRecord(start[i], stream), "cudaEventRecord");
      run_once();
      check_cuda(cudaEventRecord(stop[i], stream), "cudaEventRecord");
    }
  }
  check_cuda(cudaStreamSynchronize(stream), "timed runs");
  if (gate.timed_out.load())
    throw testkit::DeviceError(
        "the timed runs could not all be enqueued before the device started them: either the library synchronizes with "
        "the device inside the call (the kernel ABI requires asynchronous, capturable calls) or the runs overflowed "
        "the "
        "launch queue (use fewer --runs)");

  std::vector<double> seconds(static_cast<std::size_t>(plan.runs));
  for (int i = 0; i < plan.runs; ++i) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start[i], stop[i]), "cudaEventElapsedTime");
    seconds[static_cast<std::size_t>(i)] = static_cast<double>(ms) * 1e-3 / calls_per_run;
  }
  return seconds;
}

}  // namespace kvc::bench
