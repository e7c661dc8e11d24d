// stream_handle_test.cpp: the kind of stream an ABI call names (stream_handle.h), on the CPU.
//
// Catches: cudaStreamLegacy or cudaStreamPerThread taken for a created stream (the torch shim
// then hands 0x1 to torch's getStreamFromExternal, which takes it for a malformed stream id:
// "invalid StreamId", and the run dies), NULL not taken for the legacy stream, a created stream
// taken for a default one (its work would go to the wrong stream), and our two constants drifting
// from the CUDA runtime's (checked wherever the toolkit's headers are installed).
#include <gtest/gtest.h>

#include <cstdint>

#include "stream_handle.h"

#if KVC_SHIM_TEST_CUDA_HEADERS
#include <cuda_runtime_api.h>
#endif

namespace kvc::shim {
namespace {

const void* handle(std::uintptr_t v) { return reinterpret_cast<const void*>(v); }

TEST(ShimStreamHandle, TheDefaultStreamHandlesAreNotCreatedStreams) {
  EXPECT_EQ(stream_handle_kind(nullptr), StreamHandleKind::kLegacyDefault) << "NULL: the ABI's legacy default stream";
  EXPECT_EQ(stream_handle_kind(handle(0x1)), StreamHandleKind::kLegacyDefault);
  EXPECT_EQ(stream_handle_kind(handle(0x2)), StreamHandleKind::kPerThreadDefault);
}

TEST(ShimStreamHandle, AnyOtherHandleIsACreatedStream) {
  for (std::uintptr_t v :
       {std::uintptr_t{0x3}, std::uintptr_t{0x10}, std::uintptr_t{0x55d0c0ffee00}, ~std::uintptr_t{0}})
    EXPECT_EQ(stream_handle_kind(handle(v)), StreamHandleKind::kCreated) << std::hex << v;
}

TEST(ShimStreamHandle, KindsHaveDistinctNames) {
  EXPECT_STREQ(stream_handle_kind_name(StreamHandleKind::kLegacyDefault), "the legacy default stream");
  EXPECT_STREQ(stream_handle_kind_name(StreamHandleKind::kPerThreadDefault), "the per-thread default stream");
  EXPECT_STREQ(stream_handle_kind_name(StreamHandleKind::kCreated), "a created stream");
}

TEST(ShimStreamHandle, ConstantsAreTheCudaRuntimes) {
#if KVC_SHIM_TEST_CUDA_HEADERS
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(cudaStreamLegacy), kCudaStreamLegacyHandle);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(cudaStreamPerThread), kCudaStreamPerThreadHandle);
  EXPECT_EQ(stream_handle_kind(cudaStreamLegacy), StreamHandleKind::kLegacyDefault);
  EXPECT_EQ(stream_handle_kind(cudaStreamPerThread), StreamHandleKind::kPerThreadDefault);
#else
  GTEST_SKIP() << "no CUDA toolkit headers in this build: the constants are not checked against driver_types.h";
#endif
}

}  // namespace
}  // namespace kvc::shim
