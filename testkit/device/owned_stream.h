// owned_stream.h: a non-blocking CUDA stream, destroyed with its owner.
//
// Non-blocking: it never synchronises with the legacy default stream, which the stream tests hold
// on purpose. The device runners (DeviceBackend, StackedCtxKvDevice) call the ABI on one of their
// own, created on first use (so that a runner that never reaches the device creates none); the
// graph and stream tests capture, replay and wait on theirs.
#pragma once

namespace kvc::testkit {

class OwnedStream {
 public:
  // Creates the stream. Throws DeviceError.
  OwnedStream();
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;

  void* get() const { return stream_; }  // cudaStream_t: this header needs no CUDA
  // Waits for everything enqueued on the stream. Throws DeviceError.
  void synchronize() const;

 private:
  void* stream_ = nullptr;
};

}  // namespace kvc::testkit
