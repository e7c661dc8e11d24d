// owned_stream.cpp: a non-blocking CUDA stream (see owned_stream.h).
#include "testkit/device/owned_stream.h"

#include <cuda_runtime_api.h>

#include "testkit/device/device_buffers.h"

namespace kvc::testkit {

OwnedStream::OwnedStream() {
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a non-blocking stream");
  stream_ = s;
}

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void OwnedStream::synchronize() const {
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
}

}  // namespace kvc::testkit
