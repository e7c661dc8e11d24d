// cuda_graph_support.cpp: see cuda_graph_support.h.
#include "testkit/device/cuda_graph_support.h"

#include <cuda_runtime_api.h>

#include "testkit/device/device_buffers.h"

namespace kvc::gpu {

CapturedGraph::CapturedGraph(void* stream, const Enqueue& enqueue) {
  const auto s = static_cast<cudaStream_t>(stream);
  testkit::check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  std::string message;
  const int rc = enqueue(stream, &message);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  graph_ = graph;
  if (rc != 0) {
    error_ = "the ABI call returned " + std::to_string(rc) + " during the capture: " + message;
  } else if (end != cudaSuccess) {
    error_ = std::string("the capture was invalidated: cudaStreamEndCapture returned ") + cudaGetErrorName(end) + " (" +
             cudaGetErrorString(end) +
             "): the call used the legacy default stream, synchronised, or allocated while the stream was captured";
  }
  if (!ok()) {
    cudaGetLastError();  // a failed capture leaves its error behind; it is reported above instead
    return;
  }
  testkit::check_cuda(cudaGraphGetNodes(graph, nullptr, &nodes_), "cudaGraphGetNodes");
  cudaGraphExec_t exec = nullptr;
  if (const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess) {
    error_ = std::string("cudaGraphInstantiate returned ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    cudaGetLastError();
    return;
  }
  exec_ = exec;
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

void CapturedGraph::launch(void* stream) const {
  testkit::check_cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream)),
                      "cudaGraphLaunch");
}

}  // namespace kvc::gpu
