// kv_insert_test.cpp (GPU): the KV-only insert of the kernel library against the oracle.
//
// KernelMatrixKvOnly: every scenario of cases::kernel_matrix(kKvOnly) (format x tokens 0..262144
// x block size x dense/padded pages): the whole backing, canary 0xA5 included, equals the
// oracle's byte for byte; guard zones before and after every device buffer are intact; kv and
// every other input are unchanged; a second run writes identical bytes. Catches: wrong record
// bytes, writes into page padding, skipped slots or other records, writes past the cache (guard
// zones), inputs modified in place, nondeterminism.
//
// DeviceUpstreamDspark: the upstream DSpark test on the device: legacy (dummy query, Hp 8) vs
// KV-only vs oracle, every registry scenario, three rounds (the last with every slot -1).
//
// Both judge the library under the profile it declares for the case (testkit/compare/judge.h):
// a library that declares `sglang-store` is held to SGLang's bytes, one that declares `vllm` to
// the contract's, and a difference names the policies the bytes follow.
#include <gtest/gtest.h>

#include <utility>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"

namespace kvc {
namespace {

class KernelMatrixKvOnly : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(KernelMatrixKvOnly, BackingEqualsOracleGuardsIntactInputsUnchangedDeterministic) {
  KVC_REQUIRE_CUDA_DEVICE();
  gpu::expect_conformant(cases::build_kv_only(GetParam(), 0), GetParam().name());
}

INSTANTIATE_TEST_SUITE_P(Registry, KernelMatrixKvOnly, ::testing::ValuesIn(cases::kernel_matrix(InsertOp::kKvOnly)),
                         [](const ::testing::TestParamInfo<cases::ConformanceSpec>& p) { return p.param.name(); });

class DeviceUpstreamDspark : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(DeviceUpstreamDspark, LegacyDummyQueryEqualsKvOnlyEqualsOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  const cases::ConformanceSpec& spec = GetParam();
  testkit::DeviceBackend device = gpu::make_backend();
  for (int round = 0; round < cases::kUpstreamRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const InsertCase kv_only = cases::build_kv_only(spec, round);
    const InsertCase legacy = cases::build_legacy(spec, round);
    KVC_REQUIRE_SUPPORT(device, kv_only);
    KVC_REQUIRE_SUPPORT(device, legacy);

    InsertOutputs via_legacy = testkit::make_outputs(legacy);
    const Status legacy_status = device.run(legacy, via_legacy);
    ASSERT_TRUE(gpu::clean(device));
    InsertOutputs via_kv_only = testkit::make_outputs(kv_only);
    const Status kv_only_status = device.run(kv_only, via_kv_only);
    ASSERT_TRUE(gpu::clean(device));

    const std::string name = spec.name() + " round " + std::to_string(round);
    // The DSpark claim on the device: both ops write the same cache bytes, and they are the oracle's
    // (the dummy query's Q side too: zeros in, zeros out).
    EXPECT_TRUE(gpu::identical_runs(kv_only, InsertOutputs{via_legacy.cache, {}}, InsertOutputs{via_kv_only.cache, {}},
                                    "legacy insert (dummy query)", "KV-only insert"));
    EXPECT_TRUE(gpu::passes(gpu::judge(device, kv_only, kv_only_status, via_kv_only), name + " KV-only"));
    EXPECT_TRUE(gpu::passes(gpu::judge(device, legacy, legacy_status, std::move(via_legacy)), name + " legacy"));

    EXPECT_EQ(testkit::written_iff_live_defect(kv_only, via_kv_only.cache), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, DeviceUpstreamDspark, ::testing::ValuesIn(cases::conformance_matrix()),
                         [](const ::testing::TestParamInfo<cases::ConformanceSpec>& p) { return p.param.name(); });

}  // namespace
}  // namespace kvc
