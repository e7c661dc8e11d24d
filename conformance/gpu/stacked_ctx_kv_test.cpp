// stacked_ctx_kv_test.cpp (GPU): the stacked context-KV projection of the kernel library, through
// kvc_stacked_ctx_kv, against the oracle (docs/contract.md §4.5).
//
// - Exact-order GEMM: the stacked path (one GEMM, one epilogue), the per-layer path (L GEMMs, L
//   epilogues) and the oracle write the same pools and store the same projection, byte for byte:
//   every token on the upstream shapes, all tokens stacked-vs-per-layer and sample_tokens() against
//   the oracle on the production shapes. Catches a GEMM that reorders or pads its sum, a bias of
//   the wrong layer, a stacked weight sliced at the Q rows (NaN there), an epilogue that reads
//   another layer's columns or writes a -1 slot, a wrong sum-of-squares order or rsqrt.
// - cuBLAS GEMM: its stored projection within the ulp budget D of the oracle's (D derived from the
//   forward error bound for hidden (+ bias) terms and printed), and its pools exactly the oracle's
//   epilogue applied to its own projection: the reordered sum is the only difference allowed.
// - Eligibility: every scenario takes the per-layer path under AUTO, also when handed stacked
//   parameters (the library decides by itself), with the oracle's per-layer bytes; a forced
//   stacked path is E157 with nothing written.
// - The ABI's own validation (metadata rules, E158 for stacked parameters of another shape), the
//   device-side skip of out-of-range cache_loc and positions, and zero tokens.
// Every test skips, with the reason, without a CUDA device or when the library does not export
// kvc_stacked_ctx_kv.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_fp64.h"
#include "testkit/device/stacked_ctx_kv_device.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"

namespace kvc {
namespace {

using testkit::StackedDeviceOptions;
using testkit::StackedGemm;

testkit::StackedCtxKvDevice& device() {
  static testkit::StackedCtxKvDevice d(gpu::kernel_library());
  return d;
}

#define KVC_REQUIRE_STACKED_SUPPORT(c)                                \
  do {                                                                \
    const ::kvc::testkit::Support kvc_support = device().supports(c); \
    if (!kvc_support.supported) GTEST_SKIP() << kvc_support.reason;   \
  } while (0)

struct DeviceResult {
  StackedCtxKvOutputs pools;
  testkit::StackedDeviceRun run;
};

DeviceResult run_device(const StackedCtxKvCase& c, StackedPathRequest path, StackedGemm gemm,
                        StackedDeviceOptions o = {}) {
  DeviceResult r;
  r.pools = testkit::make_stacked_outputs(c);
  o.path = path;
  o.gemm = gemm;
  o.read_projection = true;
  const Status s = device().run(c, r.pools, o, &r.run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

struct OracleResult {
  StackedCtxKvOutputs pools;
  std::vector<std::uint16_t> projection;
};

OracleResult run_oracle(const StackedCtxKvCase& c) {
  OracleResult r;
  r.pools = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvRun run;
  const Status s = oracle::stacked_ctx_kv(c, r.pools, {}, &run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  r.projection = std::move(run.projection);
  return r;
}

// Rows `tokens` of a [T, width] projection.
std::vector<std::uint16_t> projection_rows(const std::vector<std::uint16_t>& p, std::int64_t width,
                                           const std::vector<std::int64_t>& tokens) {
  std::vector<std::uint16_t> rows;
  for (std::int64_t t : tokens) rows.insert(rows.end(), p.begin() + t * width, p.begin() + (t + 1) * width);
  return rows;
}

std::string reproduce(const std::string& test) {
  return "ctest --test-dir build/default -R '" + test + "' --output-on-failure";
}

::testing::AssertionResult same_pools(const StackedCtxKvCase& c, const StackedCtxKvOutputs& expected,
                                      const StackedCtxKvOutputs& actual, const std::string& expected_name,
                                      const std::string& actual_name, const std::string& test) {
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, expected, actual);
  if (r.equal()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << testkit::format_stacked_report(c, r, expected_name, actual_name,
                                                                         reproduce(test));
}

// First differing element of two projections, located; "" when equal.
std::string projection_difference(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& expected,
                                  const std::vector<std::uint16_t>& actual) {
  if (expected.size() != actual.size())
    return "projection sizes " + std::to_string(expected.size()) + " vs " + std::to_string(actual.size());
  const std::int64_t width = c.projection_width();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    const std::int64_t t = static_cast<std::int64_t>(i) / width, col = static_cast<std::int64_t>(i) % width;
    int l = 0;
    while (l + 1 < c.num_layers() && col >= c.projection_column(l + 1)) ++l;
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    const std::int64_t within = col - c.projection_column(l);
    return "projection token " + std::to_string(t) + " layer " + std::to_string(l) +
           (within >= layer.kv_size() ? " V" : " K") + " head " +
           std::to_string((within % layer.kv_size()) / layer.head_dim) + " dim " +
           std::to_string(within % layer.head_dim) + ": expected " +
           testkit::describe16(expected[i], c.storage_dtype()) + " actual " +
           testkit::describe16(actual[i], c.storage_dtype()) + ", " +
           std::to_string(testkit::ulp_distance16(expected[i], actual[i], c.storage_dtype())) + " ulp";
  }
  return {};
}

// The oracle's epilogue applied to a device's own projection: what its pools must be exactly.
StackedCtxKvOutputs epilogue_of(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& projection) {
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  const Status s = oracle::stacked_ctx_kv_epilogue(c, projection, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// ---- upstream shapes: every token against the oracle --------------------------------------------

class StackedUpstream : public ::testing::TestWithParam<cases::StackedSpec> {};

TEST_P(StackedUpstream, ExactOrderPathsEqualTheOracleByteForByte) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  const OracleResult expected = run_oracle(c);
  const DeviceResult stacked = run_device(c, StackedPathRequest::kAuto, StackedGemm::kExactOrder);
  const DeviceResult per_layer = run_device(c, StackedPathRequest::kPerLayer, StackedGemm::kExactOrder);
  EXPECT_EQ(stacked.run.path, StackedPath::kStacked) << "AUTO on an eligible model with stacked parameters";
  EXPECT_EQ(per_layer.run.path, StackedPath::kPerLayer);
  const std::string test = "StackedUpstream.ExactOrderPathsEqualTheOracleByteForByte/" + GetParam().name;
  EXPECT_TRUE(same_pools(c, expected.pools, stacked.pools, "oracle", "device stacked", test));
  EXPECT_TRUE(same_pools(c, expected.pools, per_layer.pools, "oracle", "device per-layer", test));
  EXPECT_EQ(projection_difference(c, expected.projection, stacked.run.projection), "") << "stacked";
  EXPECT_EQ(projection_difference(c, expected.projection, per_layer.run.projection), "") << "per-layer";
}

TEST_P(StackedUpstream, CublasWithinTheBudgetAndExactAfterTheGemm) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  const OracleResult expected = run_oracle(c);
  const oracle::ProjectionFp64 ref = oracle::stacked_ctx_kv_projection_fp64(c);
  const std::string test = "StackedUpstream.CublasWithinTheBudgetAndExactAfterTheGemm/" + GetParam().name;
  for (StackedPathRequest path : {StackedPathRequest::kAuto, StackedPathRequest::kPerLayer}) {
    const DeviceResult r = run_device(c, path, StackedGemm::kAnyOrder);
    const std::string name = std::string("cuBLAS ") + path_name(r.run.path);
    const testkit::ProjectionBudgetReport b =
        testkit::compare_projection_under_budget(c, expected.projection, r.run.projection, ref);
    std::printf("%s: %s", GetParam().name.c_str(), testkit::format_budget_report(c, b, name).c_str());
    EXPECT_TRUE(b.within()) << testkit::format_budget_report(c, b, name) << "reproduce: " << reproduce(test);
    EXPECT_TRUE(same_pools(c, epilogue_of(c, r.run.projection), r.pools, "oracle epilogue of the device projection",
                           name, test));
  }
}

TEST(StackedUpstreamEdges, ZeroTokensWriteNothing) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::StackedCtxKvShape s = cases::upstream_stacked_shape(DType::kBF16, true);
  s.tokens = 0;
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  for (StackedGemm gemm : {StackedGemm::kExactOrder, StackedGemm::kAnyOrder}) {
    const DeviceResult r = run_device(c, StackedPathRequest::kAuto, gemm);
    EXPECT_EQ(r.pools.k_pools, testkit::make_stacked_outputs(c).k_pools) << gemm_name(gemm);
    EXPECT_EQ(r.pools.v_pools, testkit::make_stacked_outputs(c).v_pools) << gemm_name(gemm);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, StackedUpstream, ::testing::ValuesIn(cases::stacked_upstream_matrix()),
                         [](const ::testing::TestParamInfo<cases::StackedSpec>& p) { return p.param.name; });

// ---- production shapes: every token path against path, sampled tokens against the oracle -------

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The production shape's case, built once per test (skipped without a device or the library's
// support for it); t0 times the whole test, the case's construction included.
class StackedProduction : public ::testing::TestWithParam<cases::StackedSpec> {
 protected:
  void SetUp() override {
    KVC_REQUIRE_CUDA_DEVICE();
    c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
    KVC_REQUIRE_STACKED_SUPPORT(c);
  }

  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  StackedCtxKvCase c;
};

TEST_P(StackedProduction, ExactOrderPathsAgreeAndMatchTheOracleAtSampledTokens) {
  const std::string test = "StackedProduction.ExactOrderPathsAgreeAndMatchTheOracleAtSampledTokens/" + GetParam().name;
  const DeviceResult stacked = run_device(c, StackedPathRequest::kAuto, StackedGemm::kExactOrder);
  const DeviceResult per_layer = run_device(c, StackedPathRequest::kPerLayer, StackedGemm::kExactOrder);
  EXPECT_EQ(stacked.run.path, StackedPath::kStacked);
  EXPECT_TRUE(same_pools(c, per_layer.pools, stacked.pools, "device per-layer", "device stacked", test));
  EXPECT_EQ(projection_difference(c, per_layer.run.projection, stacked.run.projection), "");
  const std::vector<std::int64_t> tokens =
      testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, GetParam().shape.seed);
  const StackedCtxKvCase sub = testkit::with_tokens(c, tokens);
  const OracleResult expected = run_oracle(sub);
  EXPECT_TRUE(same_pools(sub, expected.pools, testkit::pools_at_written_slots(sub, stacked.pools),
                         "oracle (sampled tokens)", "device stacked", test));
  EXPECT_EQ(projection_difference(sub, expected.projection,
                                  projection_rows(stacked.run.projection, c.projection_width(), tokens)),
            "");
  std::printf("%s: %zu sampled tokens against the oracle, %.1f s\n", GetParam().name.c_str(), tokens.size(),
              seconds_since(t0));
}

TEST_P(StackedProduction, CublasWithinTheBudgetAndExactAfterTheGemm) {
  const std::string test = "StackedProduction.CublasWithinTheBudgetAndExactAfterTheGemm/" + GetParam().name;
  const std::vector<std::int64_t> tokens =
      testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, GetParam().shape.seed + 1);
  const StackedCtxKvCase sub = testkit::with_tokens(c, tokens);
  const OracleResult expected = run_oracle(sub);
  const oracle::ProjectionFp64 ref = oracle::stacked_ctx_kv_projection_fp64(sub);
  for (StackedPathRequest path : {StackedPathRequest::kAuto, StackedPathRequest::kPerLayer}) {
    const DeviceResult r = run_device(c, path, StackedGemm::kAnyOrder);
    const std::string name = std::string("cuBLAS ") + path_name(r.run.path);
    const testkit::ProjectionBudgetReport b = testkit::compare_projection_under_budget(
        sub, expected.projection, projection_rows(r.run.projection, c.projection_width(), tokens), ref);
    std::printf("%s: %s", GetParam().name.c_str(), testkit::format_budget_report(sub, b, name).c_str());
    EXPECT_TRUE(b.within()) << testkit::format_budget_report(sub, b, name) << "reproduce: " << reproduce(test);
    // Every token: the pools are the oracle's epilogue of this projection.
    EXPECT_TRUE(same_pools(c, epilogue_of(c, r.run.projection), r.pools, "oracle epilogue of the device projection",
                           name, test));
  }
  std::printf("%s: %.1f s\n", GetParam().name.c_str(), seconds_since(t0));
}

INSTANTIATE_TEST_SUITE_P(Shapes, StackedProduction, ::testing::ValuesIn(cases::stacked_production_matrix()),
                         [](const ::testing::TestParamInfo<cases::StackedSpec>& p) { return p.param.name; });

// ---- eligibility and the fallback --------------------------------------------------------------

class StackedEligibilityOnDevice : public ::testing::TestWithParam<cases::EligibilityScenario> {};

TEST_P(StackedEligibilityOnDevice, AutoFallsBackToThePerLayerBytes) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = cases::build_eligibility_case(GetParam());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  const OracleResult expected = run_oracle(c);
  StackedDeviceOptions o;
  // Stacked parameters whenever they can be built: the library, not their absence, must decide.
  o.stacked_params = testkit::StackedParamsPolicy::kWheneverBuildable;
  const DeviceResult r = run_device(c, StackedPathRequest::kAuto, StackedGemm::kExactOrder, o);
  EXPECT_EQ(r.run.path, StackedPath::kPerLayer) << stacked_ctx_kv_eligibility(c).to_string();
  EXPECT_TRUE(same_pools(c, expected.pools, r.pools, "oracle per-layer", "device auto",
                         "StackedEligibilityOnDevice.*" + GetParam().name));
}

TEST_P(StackedEligibilityOnDevice, ForcedStackedPathIsE157AndWritesNothing) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = cases::build_eligibility_case(GetParam());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  StackedDeviceOptions o;
  o.path = StackedPathRequest::kStacked;
  o.host_validation = false;
  o.stacked_params = testkit::StackedParamsPolicy::kWheneverBuildable;
  // The runner throws BufferDamageError if a rejected call wrote anything.
  const Status s = device().run(c, out, o);
  EXPECT_EQ(s.code, ErrorCode::kStackedPathIneligible) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(Scenarios, StackedEligibilityOnDevice,
                         ::testing::ValuesIn(cases::stacked_eligibility_matrix()),
                         [](const ::testing::TestParamInfo<cases::EligibilityScenario>& p) { return p.param.name; });

// ---- the ABI's own validation and device-side skipping --------------------------------------------

std::vector<testkit::StackedRuleBreaker> abi_breakers() {
  std::vector<testkit::StackedRuleBreaker> v;
  for (const testkit::StackedRuleBreaker& b : testkit::stacked_rule_breakers())
    if (b.abi_visible) v.push_back(b);
  return v;
}

class StackedAbiValidation : public ::testing::TestWithParam<testkit::StackedRuleBreaker> {};

TEST_P(StackedAbiValidation, RejectedWithItsCodeAndNothingWritten) {
  KVC_REQUIRE_CUDA_DEVICE();
  StackedCtxKvCase c = testkit::small_stacked_case();
  KVC_REQUIRE_STACKED_SUPPORT(c);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  GetParam().apply(c, out);
  StackedDeviceOptions o;
  o.host_validation = false;
  const Status s = device().run(c, out, o);  // damage (a write by a rejected call) throws
  EXPECT_EQ(s.code, GetParam().code) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(Rules, StackedAbiValidation, ::testing::ValuesIn(abi_breakers()),
                         [](const ::testing::TestParamInfo<testkit::StackedRuleBreaker>& p) { return p.param.name; });

TEST(StackedAbiRequests, StackedParametersOfAnotherShapeAreE158) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::small_stacked_case();
  KVC_REQUIRE_STACKED_SUPPORT(c);
  for (testkit::StackedParamsDefect defect :
       {testkit::StackedParamsDefect::kOneRowShort, testkit::StackedParamsDefect::kBiasMissing}) {
    StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
    StackedDeviceOptions o;
    o.path = StackedPathRequest::kStacked;
    o.params_defect = defect;
    const Status s = device().run(c, out, o);
    EXPECT_EQ(s.code, ErrorCode::kStackedParamsMismatch) << s.ToString();
  }
  // No stacked parameters at all: the stacked path cannot run (E158), AUTO runs per layer.
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  StackedDeviceOptions o;
  o.path = StackedPathRequest::kStacked;
  o.stacked_params = testkit::StackedParamsPolicy::kNever;
  EXPECT_EQ(device().run(c, out, o).code, ErrorCode::kStackedParamsMismatch);
  o.path = StackedPathRequest::kAuto;
  testkit::StackedDeviceRun run;
  ASSERT_TRUE(device().run(c, out, o, &run).ok());
  EXPECT_EQ(run.path, StackedPath::kPerLayer);
}

TEST(StackedAbiRequests, CublasWithMixedDtypesIsUnsupported) {
  KVC_REQUIRE_CUDA_DEVICE();
  StackedCtxKvCase c = testkit::small_stacked_case();
  KVC_REQUIRE_STACKED_SUPPORT(c);
  testkit::make_ineligible(c, testkit::small_stacked_shape(), StackedIneligibility::kDtypeDiffers, 1);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  StackedDeviceOptions o;
  o.gemm = StackedGemm::kAnyOrder;
  try {
    device().run(c, out, o);
    ADD_FAILURE() << "a cuBLAS projection of fp16 weights for bf16 x was accepted";
  } catch (const testkit::KernelCallError& e) {
    EXPECT_NE(std::string(e.what()).find("one dtype"), std::string::npos) << e.what();
  }
}

TEST(StackedDeviceSkip, OutOfRangeCacheLocAndPositionsAreSkippedOnTheDevice) {
  KVC_REQUIRE_CUDA_DEVICE();
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kBF16, true));
  KVC_REQUIRE_STACKED_SUPPORT(c);
  // Tokens 0-2 out of range (the ABI reads no values); tokens 3 and 4 are written.
  c.cache_loc.store<std::int64_t>(0, c.layers[0].k_pool.size(0));        // one past the pools
  c.cache_loc.store<std::int64_t>(1, std::int64_t{1} << 40);             // far past them
  c.positions.store<std::int64_t>(2, c.layers[1].cos_sin.meta.size(0));  // one past the table
  StackedCtxKvCase sanitized = c;
  for (std::int64_t t : {0, 1, 2}) sanitized.cache_loc.store<std::int64_t>(t, -1);
  StackedDeviceOptions o;
  o.host_validation = false;
  const DeviceResult exact = run_device(c, StackedPathRequest::kAuto, StackedGemm::kExactOrder, o);
  EXPECT_TRUE(same_pools(sanitized, run_oracle(sanitized).pools, exact.pools, "oracle with tokens 0-2 skipped",
                         "device exact-order", "StackedDeviceSkip.*"));
  const DeviceResult any = run_device(c, StackedPathRequest::kAuto, StackedGemm::kAnyOrder, o);
  EXPECT_TRUE(same_pools(sanitized, epilogue_of(sanitized, any.run.projection), any.pools,
                         "oracle epilogue with tokens 0-2 skipped", "device cuBLAS", "StackedDeviceSkip.*"));
}

}  // namespace
}  // namespace kvc
