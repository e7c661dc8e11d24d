// default_stream_gate.h: holds the legacy default stream, so that work ordered on it cannot run.
//
// close() enqueues on the legacy default stream (cudaStreamLegacy) a one-thread kernel that spins
// until open() releases it. While the gate is closed, everything enqueued on the legacy default
// stream, or on any blocking stream (the per-thread default stream included: both synchronise
// with the legacy one), waits behind it; work on non-blocking streams runs. A stream test closes
// the gate, enqueues the op on a non-blocking stream of its own, waits for that stream and reads
// the outputs through another non-blocking stream: an op that launched on the default stream has
// written nothing yet, so its bytes are missing (and appear only after open()).
//
// The spin has a timeout, so that a library call that synchronises with the default stream (a
// deadlock while the gate is closed) ends as a reported failure instead of a hang. Kernels must
// be loaded before the gate closes (run the op once first): with CUDA's lazy module loading the
// first launch of a kernel may synchronise the context, which the held stream would block.
#pragma once

namespace kvc::gpu {

class DefaultStreamGate {
 public:
  explicit DefaultStreamGate(double timeout_seconds = 10.0);
  ~DefaultStreamGate();  // opens a closed gate and waits for the legacy default stream
  DefaultStreamGate(const DefaultStreamGate&) = delete;
  DefaultStreamGate& operator=(const DefaultStreamGate&) = delete;

  void close();
  // Releases the legacy default stream and waits for it. False when the hold had already ended
  // by its timeout: something waited for the default stream while it was held.
  bool open();
  bool is_closed() const { return closed_; }

  // Polls `stream` (a cudaStream_t) until its work is done or `seconds` pass; false on timeout.
  // Throws testkit::DeviceError when the stream reports an error.
  static bool wait_for(void* stream, double seconds);

 private:
  double timeout_seconds_;
  int* host_flags_ = nullptr;  // [0]: open, [1]: timed out; mapped pinned memory
  int* device_flags_ = nullptr;
  bool closed_ = false;
};

}  // namespace kvc::gpu
