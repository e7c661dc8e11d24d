// owned_stream.cpp: the stream a device runner calls the ABI on (see owned_stream.h).
#include "testkit/device/owned_stream.h"

#include <cuda_runtime_api.h>

#include "testkit/device/device_buffers.h"

namespace kvc::testkit {

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void* OwnedStream::get() {
  if (stream_ == nullptr) {
    cudaStream_t s = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream_ = s;
  }
  return stream_;
}

}  // namespace kvc::testkit
