// wrong_stream_abi.h: planted defects for the graph and stream tests.
//
// A kernel ABI table that forwards every op to the library under test but launches it on
// another stream than the one the caller passed: the legacy default stream, the per-thread
// default stream, or a private non-blocking stream of its own. These are the stream bugs a
// serving engine meets (an op that ignores its stream argument); each check of the graph and
// stream tests is shown to catch one of them.
#pragma once

#include "testkit/device/kernel_library.h"

namespace kvc::gpu {

enum class WrongStream {
  kLegacyDefault,     // stream 0 as the legacy default stream (cudaStreamLegacy)
  kPerThreadDefault,  // cudaStreamPerThread
  kPrivate,           // a non-blocking stream created by the forwarder
};

const char* wrong_stream_name(WrongStream s);

// A copy of `real` whose insert and kv_norm entry points ignore their stream argument and launch
// on `which` instead. The forwarding entry points are plain C functions with one target per
// program: the last call's `real` and `which` apply to every table made so far.
testkit::KernelAbi wrong_stream_abi(const testkit::KernelAbi& real, WrongStream which);

}  // namespace kvc::gpu
