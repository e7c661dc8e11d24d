// owned_stream.h: a non-blocking CUDA stream, created on first use and destroyed with its owner.
//
// The device runners (DeviceBackend, StackedCtxKvDevice) call the ABI on a stream of their own,
// never on the legacy default stream, which the stream tests hold on purpose. It is created on
// first use, so that a runner that never reaches the device creates none.
#pragma once

namespace kvc::testkit {

class OwnedStream {
 public:
  OwnedStream() = default;
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;

  // The stream, as a cudaStream_t behind void* (this header needs no CUDA). Throws DeviceError
  // when it cannot be created.
  void* get();

 private:
  void* stream_ = nullptr;
};

}  // namespace kvc::testkit
