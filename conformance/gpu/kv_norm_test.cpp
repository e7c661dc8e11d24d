// kv_norm_test.cpp (GPU): kv_norm of the kernel library against the oracle.
//
// Standalone (kvc_kv_norm): outputs equal oracle::kv_norm byte for byte (or within the declared
// approximate-rsqrt window), out of place and in place (out aliasing kv), for row counts around
// the warp and block sizes; guard zones intact, kv and weight unchanged when out of place.
// Fused in front of the KV-only insert (kv_norm_weight): the judge's verdict (the backing equals
// the oracle's under the declared profile, norm rows within a declared approximate rsqrt) in every
// format; and on the kernel matrix's offset-view scenarios with the weight at a 2-byte offset, a
// view the contract allows (the weight has no alignment rule). Catches: a wrong reduction order or
// rsqrt, a missing bf16 rounding of the normed row, rows dropped or written twice at block
// boundaries, an alias that reads a row after writing it, a weight read with 16-byte loads from a
// view that is not 16-byte aligned (a fault) or from its buffer's start instead of its offset.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_norm.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"
#include "testkit/cases/case_builder.h"

namespace kvc {
namespace {

constexpr float kEps = 1e-6f;

HostTensor weight_tensor(testkit::Rng& rng) {
  std::vector<std::uint16_t> w(kHeadDim);
  for (auto& x : w) x = oracle::float_to_bf16(1.0f + 0.25f * rng.normal());
  return make_tensor_from(DType::kBF16, w, {kHeadDim});
}

class StandaloneKvNorm : public gpu::KvNormRowsTest {};

TEST_P(StandaloneKvNorm, EqualsOracle) {
  const auto [rows, in_place] = GetParam();
  testkit::DeviceBackend& device = backend();
  testkit::Rng rng(static_cast<std::uint64_t>(rows) * 7 + 1);
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, rows), {rows, kHeadDim});
  const HostTensor w = weight_tensor(rng);
  std::vector<std::uint16_t> expected, actual;
  ASSERT_TRUE(oracle::kv_norm(kv, w, kEps, &expected).ok());
  const Status s = device.kv_norm(kv, w, kEps, &actual, in_place);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(gpu::clean(device));
  if (expected == actual) return;
  const testkit::ApproxRsqrtResult r =
      testkit::compare_kv_norm_under_rsqrt_mode(kv, w, kEps, device.kv_norm_rsqrt_mode(), expected, actual);
  EXPECT_TRUE(r.accepted) << r.report;
}

INSTANTIATE_TEST_SUITE_P(Rows, StandaloneKvNorm,
                         ::testing::Combine(::testing::Values<std::int64_t>(0, 1, 17, 1023, 1024, 1025, 65536),
                                            ::testing::Bool()),
                         testkit::ParamNamedBy<gpu::kv_norm_rows_name>());

class FusedKvNorm : public ::testing::TestWithParam<RecordFormat> {};

TEST_P(FusedKvNorm, InsertWithKvNormEqualsOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  cases::ConformanceSpec spec{GetParam(), kTokenCutoff + 1, 64};
  spec.values = cases::KvValues::kWideRange;
  InsertCase c = cases::build_kv_only(spec, 0);
  testkit::Rng rng(11);
  c.kv_norm_weight = weight_tensor(rng);
  c.kv_norm_eps = kEps;
  testkit::DeviceBackend device = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(device, c);
  InsertOutputs actual = testkit::make_outputs(c);
  const Status s = device.run(c, actual);
  ASSERT_TRUE(gpu::clean(device));
  EXPECT_TRUE(gpu::passes(gpu::judge(device, c, s, std::move(actual)), spec.name() + " fused kv_norm"));
}

INSTANTIATE_TEST_SUITE_P(Formats, FusedKvNorm, ::testing::ValuesIn(kAllFormats),
                         [](const ::testing::TestParamInfo<RecordFormat>& p) {
                           return testkit::format_test_name(p.param);
                         });

class FusedKvNormOffsetViews : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(FusedKvNormOffsetViews, WeightAtATwoByteOffsetEqualsOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  const cases::ConformanceSpec& spec = GetParam();
  InsertCase c = cases::build_kv_only(spec, 0);
  testkit::Rng rng(spec.seed + 11);
  c.kv_norm_weight = cases::place_kv_norm_weight(spec, weight_tensor(rng));
  ASSERT_EQ(c.kv_norm_weight.meta.offset_bytes % 16, 2) << "the weight must be 2-byte, not 16-byte, aligned";
  c.kv_norm_eps = kEps;
  testkit::DeviceBackend device = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(device, c);
  InsertOutputs actual = testkit::make_outputs(c);
  const Status s = device.run(c, actual);
  ASSERT_TRUE(gpu::clean(device));
  EXPECT_TRUE(gpu::passes(gpu::judge(device, c, s, std::move(actual)), spec.name() + " fused kv_norm"));
}

std::vector<cases::ConformanceSpec> offset_view_specs() {
  std::vector<cases::ConformanceSpec> v;
  for (const cases::ConformanceSpec& s : cases::kernel_matrix(InsertOp::kKvOnly))
    if (s.placement == cases::Placement::kOffsetViews) v.push_back(s);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Registry, FusedKvNormOffsetViews, ::testing::ValuesIn(offset_view_specs()),
                         [](const ::testing::TestParamInfo<cases::ConformanceSpec>& p) { return p.param.name(); });

}  // namespace
}  // namespace kvc
