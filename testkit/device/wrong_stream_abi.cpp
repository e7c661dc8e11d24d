// wrong_stream_abi.cpp: see wrong_stream_abi.h.
#include "testkit/device/wrong_stream_abi.h"

#include <cuda_runtime_api.h>

#include "testkit/device/device_buffers.h"

namespace kvc::gpu {
namespace {

testkit::KernelAbi g_real;
void* g_stream = nullptr;

int kv_only_insert(const kvc_kv_only_insert_args* args, void*, char* error, size_t capacity) {
  return g_real.kvc_kv_only_insert(args, g_stream, error, capacity);
}
int legacy_insert(const kvc_legacy_insert_args* args, void*, char* error, size_t capacity) {
  return g_real.kvc_legacy_insert(args, g_stream, error, capacity);
}
int kv_norm(const kvc_kv_norm_args* args, void*, char* error, size_t capacity) {
  return g_real.kvc_kv_norm(args, g_stream, error, capacity);
}

void* stream_of(WrongStream which) {
  switch (which) {
    case WrongStream::kLegacyDefault: return cudaStreamLegacy;
    case WrongStream::kPerThreadDefault: return cudaStreamPerThread;
    case WrongStream::kPrivate: break;
  }
  static cudaStream_t own = [] {
    cudaStream_t s = nullptr;
    testkit::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating the private stream");
    return s;  // kept for the program's lifetime
  }();
  return own;
}

}  // namespace

const char* wrong_stream_name(WrongStream s) {
  switch (s) {
    case WrongStream::kLegacyDefault: return "the legacy default stream";
    case WrongStream::kPerThreadDefault: return "the per-thread default stream";
    case WrongStream::kPrivate: return "a private non-blocking stream";
  }
  return "another stream";
}

testkit::KernelAbi wrong_stream_abi(const testkit::KernelAbi& real, WrongStream which) {
  g_real = real;
  g_stream = stream_of(which);
  testkit::KernelAbi abi = real;
  abi.kvc_kv_only_insert = &kv_only_insert;
  abi.kvc_legacy_insert = &legacy_insert;
  abi.kvc_kv_norm = &kv_norm;
  return abi;
}

}  // namespace kvc::gpu
