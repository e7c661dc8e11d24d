// cuda_graph_support.h: captured graphs for the graph and stream tests (their streams:
// testkit::OwnedStream, owned_stream.h).
//
// CapturedGraph: what an enqueue callback puts on a stream, captured
// in cudaStreamCaptureModeGlobal (the strictest mode: a launch on the legacy default stream, a
// synchronising call or an allocation during the capture invalidates it, as it would inside a
// serving engine's graph), then instantiated for replay on any stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace kvc::gpu {

class CapturedGraph {
 public:
  // enqueue(stream, message) returns the ABI status of the call it makes on `stream`.
  using Enqueue = std::function<int(void* stream, std::string* message)>;

  // Captures `enqueue` on `stream` and instantiates the graph. ok() is false when the call
  // returned a status, the capture was invalidated or instantiation failed; error() says which.
  CapturedGraph(void* stream, const Enqueue& enqueue);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::size_t nodes() const { return nodes_; }
  // Launches the instantiated graph on `stream` (not synchronised). Throws testkit::DeviceError.
  void launch(void* stream) const;

 private:
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  std::size_t nodes_ = 0;
  std::string error_;
};

}  // namespace kvc::gpu
