// torch_shim_test.cpp (GPU): the libtorch shim end to end. The shim is loaded the way KVC_KERNELS
// loads any library and configured with the test extension (test_ops.cpp: our kernels registered
// as torch ops with vLLM's schemas), so every call goes suite -> kernel ABI (shim) -> torch
// dispatcher -> torch op -> our kernels, on the device backend's stream.
//
// Catches: an op not found by its schema name, arguments matched to the wrong schema names (a
// swapped position/slot tensor, a dropped kv_mxfp8), a copy instead of a view (the cache bytes
// would not come back), a strided view of a padded cache made contiguous, work enqueued on
// another stream than the caller's (the backend synchronises its own stream only), and a shim
// that forwards a call its validation must reject. The shim's bytes must equal both the
// oracle's and the direct path's (our kernels through their own ABI) for every case.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpu_test_support.h"
#include "kvc/cases/registry.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/testkit/backing.h"
#include "kvc/testkit/case_builder.h"
#include "kvc/testkit/small_cases.h"

namespace kvc {
namespace {

// The matrix through the shim stops here: the dispatcher path has no size-dependent code, and
// the direct path runs the large cases in the kernel matrix.
constexpr std::int64_t kShimMaxTokens = 1025;

const testkit::KernelLibrary& shim_library() {
  static const testkit::KernelLibrary library = [] {
    // The shim reads its config once, on first use: set it before loading.
    setenv("KVC_TORCH_SHIM_CONFIG", KVC_TORCH_SHIM_TEST_CONFIG, 1);
    testkit::KernelLibrary l = testkit::KernelLibrary::open(KVC_TORCH_SHIM);
    std::printf("torch shim under test: %s\n", l.describe().c_str());
    return l;
  }();
  return library;
}

testkit::DeviceBackend shim_backend(testkit::DeviceBackendOptions options = {}) {
  options.throw_on_damage = false;
  return testkit::DeviceBackend(shim_library(), options);
}

testkit::DeviceBackend direct_backend() {
  testkit::DeviceBackendOptions options;
  options.throw_on_damage = false;
  return testkit::DeviceBackend(testkit::KernelLibrary::builtin(), options);
}

TEST(TorchShim, LoadsAndDeclaresTheConfiguredOps) {
  KVC_REQUIRE_CUDA_DEVICE();
  const testkit::DeviceBackend shim = shim_backend();
  EXPECT_NE(shim.name().find("kvconform torch shim over kvc_test"), std::string::npos) << shim.name();
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

class TorchShimMatrix : public ::testing::TestWithParam<MatrixCell> {};

TEST_P(TorchShimMatrix, EqualsTheOracleAndTheDirectPath) {
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
  EXPECT_TRUE(gpu::identical_runs(c, through_abi, through_shim, "direct (our ABI)", "through the torch shim"));
  EXPECT_TRUE(gpu::matches_oracle(c, gpu::oracle_outputs(c), through_shim, RsqrtMode::kCorrectlyRounded,
                                  cell.spec.name() + " through the torch shim"));
}

INSTANTIATE_TEST_SUITE_P(Registry, TorchShimMatrix, ::testing::ValuesIn(shim_matrix()),
                         [](const ::testing::TestParamInfo<MatrixCell>& p) {
                           return std::string(p.param.op == InsertOp::kLegacy ? "Legacy_" : "KvOnly_") +
                                  p.param.spec.name();
                         });

TEST(TorchShim, FusedAndStandaloneKvNormEqualTheOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend shim = shim_backend();
  testkit::Rng rng(11);
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 37), {37, kHeadDim});
  const HostTensor w = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 1), {kHeadDim});
  std::vector<std::uint16_t> expected, actual;
  ASSERT_TRUE(oracle::kv_norm(kv, w, 1e-6f, &expected).ok());
  ASSERT_TRUE(shim.kv_norm(kv, w, 1e-6f, &actual).ok()) << shim.last_checks().abi_message;
  EXPECT_TRUE(gpu::clean(shim));
  EXPECT_EQ(expected, actual);
  for (RecordFormat f : kAllFormats) {
    InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, f, 5);
    c.kv_norm_weight = w;
    InsertOutputs out = testkit::make_outputs(c);
    const Status s = shim.run(c, out);
    ASSERT_TRUE(s.ok()) << layout_of(f).name << ": " << s.ToString() << " " << shim.last_checks().abi_message;
    EXPECT_TRUE(gpu::matches_oracle(c, gpu::oracle_outputs(c), out, RsqrtMode::kCorrectlyRounded,
                                    std::string(layout_of(f).name) + " with kv_norm through the torch shim"));
  }
}

TEST(TorchShim, RejectsAMetadataRuleWithItsCodeAndCallsNoOp) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackendOptions direct;
  direct.host_validation = false;  // the shim's own validation must answer
  testkit::DeviceBackend shim = shim_backend(direct);
  InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked528);
  c.cache.offset_bytes += 8;  // a misaligned cache base reaches the shim as byte_offset
  InsertOutputs out = testkit::make_outputs(c);
  const InsertOutputs before = out;
  EXPECT_EQ(shim.run(c, out).code, ErrorCode::kMisaligned);
  EXPECT_TRUE(gpu::clean(shim));
  EXPECT_EQ(out.cache, before.cache);
  EXPECT_EQ(out.q_out, before.q_out);
}

}  // namespace
}  // namespace kvc
