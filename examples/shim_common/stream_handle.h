// stream_handle.h: which kind of CUDA stream an ABI call's `stream` names, decided once for both
// shims. The ABI passes a cudaStream_t as void*; besides a stream the caller created, three
// handles are not streams but names the CUDA runtime resolves at launch: NULL and cudaStreamLegacy
// ((cudaStream_t)0x1) for the device's legacy default stream, cudaStreamPerThread
// ((cudaStream_t)0x2) for the calling thread's default stream. A library that hands them on
// as if they were created streams can crash (torch's getStreamFromExternal takes 0x1 for a
// malformed stream id: "invalid StreamId") or launch on the wrong stream (NULL means the
// per-thread stream in code built with --default-stream per-thread), so each shim maps each kind
// on purpose (torch_shim.cpp, tvm_ffi_shim.cpp). No CUDA header is needed: the two values are the
// CUDA runtime's documented constants (driver_types.h), checked against it by stream_handle_test
// wherever the toolkit is installed.
#pragma once

#include <cstdint>

namespace kvc::shim {

enum class StreamHandleKind : std::uint8_t {
  kLegacyDefault,     // NULL or cudaStreamLegacy: the device's legacy default stream
  kPerThreadDefault,  // cudaStreamPerThread: the calling thread's default stream
  kCreated,           // any other handle: a stream the caller created (cudaStreamCreate*)
};

// cudaStreamLegacy and cudaStreamPerThread as integers (driver_types.h).
inline constexpr std::uintptr_t kCudaStreamLegacyHandle = 0x1;
inline constexpr std::uintptr_t kCudaStreamPerThreadHandle = 0x2;

StreamHandleKind stream_handle_kind(const void* stream);

// "the legacy default stream", "the per-thread default stream", "a created stream": for messages.
const char* stream_handle_kind_name(StreamHandleKind kind);

}  // namespace kvc::shim
