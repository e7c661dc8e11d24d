// shim_conformance_test.cpp (GPU): a shim end to end, compiled once per shim (torch_shim_test,
// tvm_ffi_shim_test) with KVC_SHIM_LIBRARY, KVC_SHIM_CONFIG_ENV, KVC_SHIM_CONFIG and KVC_SHIM_NAME.
// The shim is loaded the way KVC_KERNELS loads any library and configured with its test library
// (our kernels registered as torch ops with vLLM's schemas, or exported as tvm-ffi functions), so
// every call goes suite -> kernel ABI (shim) -> the other library's calling convention (torch
// dispatcher, tvm-ffi safe call) -> our kernels, on the device backend's stream.
//
// Catches: an op not found by its name, arguments matched to the wrong names or positions (a
// swapped position/slot tensor, a dropped kv_mxfp8), a copy instead of a view (the cache bytes
// would not come back), a strided view of a padded cache made contiguous, byte_offset lost, and a
// shim that forwards a call its validation must reject, and a shim that cannot take the default
// stream handles (the torch shim once gave cudaStreamLegacy to torch's getStreamFromExternal:
// "invalid StreamId", then a crash). The matrix bytes must equal both the oracle's and the direct
// path's (our kernels through their own ABI); kv_norm is compared with the oracle. Not caught
// here: work on another stream than the caller's (reads back synchronise the device); run the
// stream tests through the shim for that (KVC_KERNELS=<shim> ctest -R Stream).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "testkit/device/device_buffers.h"
#include "testkit/device/device_case_buffers.h"
#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/small_cases.h"

// One suite name per shim (-DKVC_SHIM_SUITE=TorchShim, TvmFfiShim), so that ctest names stay
// unique and `ctest -R TorchShim` picks one shim. gtest stringizes suite names: the wrappers make
// the preprocessor expand KVC_SHIM_SUITE first.
#define KVC_SHIM_CAT_(a, b)                       a##b
#define KVC_SHIM_CAT(a, b)                        KVC_SHIM_CAT_(a, b)
#define KVC_SHIM_MATRIX                           KVC_SHIM_CAT(KVC_SHIM_SUITE, Matrix)
#define KVC_SHIM_TEST_(suite, name)               TEST(suite, name)
#define KVC_SHIM_TEST(name)                       KVC_SHIM_TEST_(KVC_SHIM_SUITE, name)
#define KVC_SHIM_TEST_P_(suite, name)             TEST_P(suite, name)
#define KVC_SHIM_INSTANTIATE_(prefix, suite, ...) INSTANTIATE_TEST_SUITE_P(prefix, suite, __VA_ARGS__)

namespace kvc {
namespace {

// The matrix through the shim stops here: the shims have no size-dependent code, and the direct
// path runs the large cases in the kernel matrix.
constexpr std::int64_t kShimMaxTokens = 1025;

const testkit::KernelLibrary& shim_library() {
  static const testkit::KernelLibrary library = [] {
    // The shim reads its config once, on first use: set it before loading.
    setenv(KVC_SHIM_CONFIG_ENV, KVC_SHIM_CONFIG, 1);
    testkit::KernelLibrary l = testkit::KernelLibrary::open(KVC_SHIM_LIBRARY);
    std::printf("%s under test: %s\n", KVC_SHIM_NAME, l.describe().c_str());
    return l;
  }();
  return library;
}

testkit::DeviceBackend shim_backend() { return gpu::make_backend(shim_library()); }

testkit::DeviceBackend direct_backend() {
  testkit::DeviceBackendOptions options;
  options.throw_on_damage = false;
  return testkit::DeviceBackend(testkit::KernelLibrary::builtin(), options);
}

KVC_SHIM_TEST(LoadsAndDeclaresTheConfiguredOps) {
  KVC_REQUIRE_CUDA_DEVICE();
  const testkit::DeviceBackend shim = shim_backend();
  EXPECT_NE(shim.name().find(std::string("kvconform ") + KVC_SHIM_NAME + " over kvc_test"), std::string::npos)
      << shim.name();
  EXPECT_EQ(shim.name().find("NOT CONFIGURED"), std::string::npos) << shim.name();
  for (RecordFormat f : kAllFormats)
    for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
      const testkit::Support s = shim.supports(testkit::small_valid_case(op, f));
      EXPECT_TRUE(s.supported) << layout_of(f).name << ": " << s.reason;
    }
  EXPECT_TRUE(shim.supports_kv_norm().supported);
}

struct MatrixCell {
  InsertOp op;
  cases::ConformanceSpec spec;
};

std::vector<MatrixCell> shim_matrix() {
  std::vector<MatrixCell> cells;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
    for (const cases::ConformanceSpec& spec : cases::kernel_matrix(op))
      if (spec.tokens <= kShimMaxTokens) cells.push_back({op, spec});
  return cells;
}

class KVC_SHIM_MATRIX : public ::testing::TestWithParam<MatrixCell> {};

KVC_SHIM_TEST_P_(KVC_SHIM_MATRIX, EqualsTheOracleAndTheDirectPath) {
  KVC_REQUIRE_CUDA_DEVICE();
  const MatrixCell& cell = GetParam();
  const InsertCase c = cases::build_case(cell.op, cell.spec, 0);
  testkit::DeviceBackend shim = shim_backend();
  testkit::DeviceBackend direct = direct_backend();
  InsertOutputs through_shim = testkit::make_outputs(c), through_abi = testkit::make_outputs(c);
  const Status s = shim.run(c, through_shim);
  ASSERT_TRUE(s.ok()) << "the shim rejected a valid case: " << s.ToString() << " " << shim.last_checks().abi_message;
  ASSERT_TRUE(gpu::clean(shim));
  ASSERT_TRUE(direct.run(c, through_abi).ok());
  EXPECT_TRUE(gpu::identical_runs(c, through_abi, through_shim, "direct (our ABI)",
                                  std::string("through the ") + KVC_SHIM_NAME));
  EXPECT_TRUE(
      gpu::passes(gpu::judge(shim, c, s, std::move(through_shim)), cell.spec.name() + " through the " + KVC_SHIM_NAME));
}

KVC_SHIM_INSTANTIATE_(Registry, KVC_SHIM_MATRIX, ::testing::ValuesIn(shim_matrix()),
                      [](const ::testing::TestParamInfo<MatrixCell>& p) {
                        return std::string(p.param.op == InsertOp::kLegacy ? "Legacy_" : "KvOnly_") +
                               p.param.spec.name();
                      });

KVC_SHIM_TEST(FusedAndStandaloneKvNormEqualTheOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend shim = shim_backend();
  testkit::Rng rng(11);
  const HostTensor w = gpu::expect_kv_norm_equals_oracle(shim, rng, 37);
  for (RecordFormat f : kAllFormats) {
    InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, f, 5);
    c.kv_norm_weight = w;
    InsertOutputs out = testkit::make_outputs(c);
    const Status s = shim.run(c, out);
    EXPECT_TRUE(gpu::passes(gpu::judge(shim, c, s, std::move(out)), std::string(layout_of(f).name) +
                                                                        " with kv_norm through the " + KVC_SHIM_NAME +
                                                                        " (" + shim.last_checks().abi_message + ")"));
  }
}

// The shim called on the stream handles that are not created streams (stream_handle.h): NULL and
// cudaStreamLegacy (the legacy default stream) and cudaStreamPerThread. Each call must be answered
// 0 and write the oracle's bytes, nothing else. The device is synchronised before the read back
// (DeviceCaseBuffers' transfers do not wait for the caller's streams).
KVC_SHIM_TEST(TheDefaultStreamHandlesAreTakenAndWriteTheOraclesBytes) {
  KVC_REQUIRE_CUDA_DEVICE();
  const struct {
    void* stream;
    const char* name;
  } handles[] = {
      {nullptr, "NULL"}, {cudaStreamLegacy, "cudaStreamLegacy"}, {cudaStreamPerThread, "cudaStreamPerThread"}};
  const testkit::DeviceBackend judge_for = shim_backend();  // declarations only: no call goes through it
  for (const auto& h : handles)
    for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
      const std::string what = std::string(op == InsertOp::kLegacy ? "legacy" : "kv_only") + " through the " +
                               KVC_SHIM_NAME + " on " + h.name;
      const InsertCase c = testkit::small_valid_case(op, RecordFormat::kPacked584);
      testkit::DeviceCaseBuffers resident(c, testkit::make_outputs(c));
      std::string message;
      const int rc = resident.enqueue(shim_library().abi(), h.stream, &message);
      testkit::check_cuda(cudaDeviceSynchronize(), "waiting for " + what);
      ASSERT_EQ(rc, KVC_STATUS_OK) << what << ": " << message;
      EXPECT_TRUE(resident.damage().empty()) << what << " damaged a guard zone or an input";
      // Judged under the shim's declared profile, like every other verdict (testkit/compare/judge.h).
      EXPECT_TRUE(gpu::passes(gpu::judge(judge_for, c, Status::Ok(), resident.read_outputs()), what));
    }
}

KVC_SHIM_TEST(RejectsAMetadataRuleWithItsCodeAndCallsNoOp) {
  KVC_REQUIRE_CUDA_DEVICE();
  gpu::expect_rejects_misaligned_cache(shim_library(), InsertOp::kLegacy);
}

}  // namespace
}  // namespace kvc
