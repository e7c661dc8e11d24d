// stacked_ctx_kv_test.cpp (GPU): the stacked context-KV projection of the kernel library, through
// kvc_stacked_ctx_kv, against the oracle (docs/contract.md §4.5). The oracle comparisons are the
// shared checks (testkit/device/stacked_ctx_kv_checks.h), which `kvconform run --suites stacked`
// runs too, judged by the stacked judge (testkit/compare/stacked_ctx_kv_judge.h).
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
//   stacked or fused path is E157 with nothing written.
// - The version 3 families (contract version 3): fused-eligible models on every path (AUTO must
//   take the fused path, the forced fused path must equal the oracle), head_dim no power of two
//   and the fallback head sizes, hidden 4096 with 8 and 12 layers under the any-order budget, and
//   commit lengths. Catches a fused kernel that projects another head's rows, reorders or pads the
//   chain, writes a token outside its committed prefix or a skipped token, a mean taken as S / hd,
//   an epilogue that assumes head_dim a power of two or a multiple of 32, a budget D that a split
//   reduction exceeds. The fused path without a projection output still writes the oracle's pools.
// - The ABI's own validation (metadata rules, E158 for stacked parameters of another shape), the
//   device-side skip of out-of-range cache_loc and positions, and zero tokens.
// - Declared stacked policies (kernel ABI 1.3, docs/contract.md §6.2.1): every run is judged under
//   the profile the library declares for the path it took, each case laid out for its cache_loc
//   policy (slot 0 reserved: a skipped token at 0, not -1); the report names the profile.
// Every test skips, with the reason, without a CUDA device or when the library does not export
// kvc_stacked_ctx_kv.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "testkit/device/stacked_ctx_kv_checks.h"
#include "testkit/device/stacked_ctx_kv_device.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"
#include "testkit/cases/stacked_cache_loc_layout.h"

namespace kvc {
namespace {

using testkit::StackedDeviceOptions;
using testkit::StackedGemm;

testkit::StackedCtxKvDevice& device() {
  static testkit::StackedCtxKvDevice d(gpu::kernel_library());
  return d;
}

// The library's cache_loc policy for the per-layer path (its declaration): cases sent without the
// shared checks are laid out for it, and validated on the host under it.
CacheLocPolicy cache_loc_policy(const StackedCtxKvCase& c) {
  return device().case_profile(c.storage_dtype()).cache_loc;
}
StackedCtxKvCase laid_out(const StackedCtxKvCase& c) { return testkit::in_cache_loc_policy(c, cache_loc_policy(c)); }
// The cache_loc entry that skips a token under the library's policy.
std::int64_t skip_entry(const StackedCtxKvCase& c) {
  return cache_loc_policy(c) == CacheLocPolicy::kSlotZeroReserved ? 0 : -1;
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
  o.cache_loc = cache_loc_policy(c);
  const Status s = device().run(c, r.pools, o, &r.run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

std::string reproduce(const std::string& test) {
  return "ctest --test-dir build/default -R '" + test + "' --output-on-failure";
}

// One of the shared checks (testkit/device/stacked_ctx_kv_checks.h), the runner's too: skipped
// when the library answers KVC_STATUS_UNSUPPORTED for the GEMM (the ABI allows it for the exact
// order); the verdict printed (the budget used, the bytes compared) and asserted.
#define KVC_EXPECT_STACKED_CHECK(c, check, tokens, test)                                            \
  do {                                                                                              \
    std::optional<testkit::Verdict> kvc_verdict;                                                    \
    try {                                                                                           \
      kvc_verdict = testkit::check_stacked(device(), (c), (check), (tokens), reproduce(test));      \
    } catch (const testkit::StackedGemmUnsupported& e) {                                            \
      GTEST_SKIP() << e.what();                                                                     \
    }                                                                                               \
    std::printf("%s%s:\n%s", GetParam().name.c_str(), testkit::stacked_check_suffix(check),         \
                kvc_verdict->report.c_str());                                                       \
    EXPECT_TRUE(gpu::passes(*kvc_verdict, GetParam().name + testkit::stacked_check_suffix(check))); \
  } while (0)

// ---- upstream shapes: every token against the oracle --------------------------------------------

class StackedUpstream : public ::testing::TestWithParam<cases::StackedSpec> {};

TEST_P(StackedUpstream, ExactOrderPathsEqualTheOracleByteForByte) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kExactOrder, std::vector<std::int64_t>{},
                           "StackedUpstream.ExactOrderPathsEqualTheOracleByteForByte/" + GetParam().name);
}

TEST_P(StackedUpstream, CublasWithinTheBudgetAndExactAfterTheGemm) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kAnyOrder, std::vector<std::int64_t>{},
                           "StackedUpstream.CublasWithinTheBudgetAndExactAfterTheGemm/" + GetParam().name);
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
  const std::vector<std::int64_t> tokens =
      testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, GetParam().shape.seed);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kExactOrder, tokens,
                           "StackedProduction.ExactOrderPathsAgreeAndMatchTheOracleAtSampledTokens/" + GetParam().name);
  std::printf("%s: %zu sampled tokens against the oracle, %.1f s\n", GetParam().name.c_str(), tokens.size(),
              seconds_since(t0));
}

TEST_P(StackedProduction, CublasWithinTheBudgetAndExactAfterTheGemm) {
  const std::vector<std::int64_t> tokens =
      testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, GetParam().shape.seed + 1);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kAnyOrder, tokens,
                           "StackedProduction.CublasWithinTheBudgetAndExactAfterTheGemm/" + GetParam().name);
  std::printf("%s: %.1f s\n", GetParam().name.c_str(), seconds_since(t0));
}

INSTANTIATE_TEST_SUITE_P(Shapes, StackedProduction, ::testing::ValuesIn(cases::stacked_production_matrix()),
                         [](const ::testing::TestParamInfo<cases::StackedSpec>& p) { return p.param.name; });

// ---- the version 3 families: fused path, head sizes, split reduction, commit lengths -----------

// Every family of stacked_v3_families() (testkit/cases/stacked_ctx_kv_registry.h), by name.
std::vector<cases::StackedSpec> v3_specs() {
  std::vector<cases::StackedSpec> v;
  for (const std::vector<cases::StackedSpec>* family : cases::stacked_v3_families())
    v.insert(v.end(), family->begin(), family->end());
  return v;
}

class StackedV3Family : public ::testing::TestWithParam<cases::StackedSpec> {
 protected:
  std::vector<std::int64_t> judged(const StackedCtxKvCase& c, std::uint64_t seed_offset) const {
    if (!GetParam().sampled()) return {};
    return testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens,
                                  GetParam().shape.seed + seed_offset);
  }
};

// Every path (the fused one where the model is eligible for it) and the oracle, byte for byte.
TEST_P(StackedV3Family, ExactOrderEveryPathEqualsTheOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kExactOrder, judged(c, 0),
                           "StackedV3Family.ExactOrderEveryPathEqualsTheOracle/" + GetParam().name);
}

// The any-order GEMM within the budget D (hidden 4096 with 8 and 12 layers: a split reduction must
// stay within it), its pools the oracle's epilogue of its projection.
TEST_P(StackedV3Family, AnyOrderWithinTheBudgetAndExactAfterTheGemm) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kAnyOrder, judged(c, 1),
                           "StackedV3Family.AnyOrderWithinTheBudgetAndExactAfterTheGemm/" + GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Families, StackedV3Family, ::testing::ValuesIn(v3_specs()),
                         [](const ::testing::TestParamInfo<cases::StackedSpec>& p) { return p.param.name; });

// The fused path without a projection output (what a caller runs: no scratch, no projection
// stored) writes the oracle's pools; asked for any order it runs its one order, the exact one.
TEST(StackedFusedOnDevice, WithoutAProjectionOutputItWritesTheOraclesPools) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::stacked_fused_matrix().front().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  for (StackedGemm gemm : {StackedGemm::kExactOrder, StackedGemm::kAnyOrder}) {
    testkit::StackedRun run;
    run.name = std::string("device fused, no projection output, ") + gemm_name(gemm) + " GEMM";
    run.pools = testkit::make_stacked_outputs(c);
    StackedDeviceOptions o;
    o.path = StackedPathRequest::kFused;
    o.gemm = gemm;
    testkit::StackedDeviceRun info;
    try {
      run.status = device().run(c, run.pools, o, &info);
    } catch (const testkit::KernelCallError& e) {
      if (info.checks.abi_status == KVC_STATUS_UNSUPPORTED) GTEST_SKIP() << e.what();
      throw;
    }
    run.path = info.path;
    run.required_path = StackedPath::kFused;
    const testkit::Verdict v =
        testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {run}, reproduce("StackedFusedOnDevice.*"));
    EXPECT_TRUE(gpu::passes(v, run.name));
  }
}

// ---- eligibility and the fallback --------------------------------------------------------------

class StackedEligibilityOnDevice : public ::testing::TestWithParam<cases::EligibilityScenario> {};

TEST_P(StackedEligibilityOnDevice, AutoFallsBackToThePerLayerBytes) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = cases::build_eligibility_case(GetParam());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kAutoFallsBack, std::vector<std::int64_t>{},
                           "StackedEligibilityOnDevice.*" + GetParam().name);
}

TEST_P(StackedEligibilityOnDevice, ForcedStackedPathIsE157AndWritesNothing) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = laid_out(cases::build_eligibility_case(GetParam()));
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

TEST_P(StackedEligibilityOnDevice, ForcedFusedPathIsE157AndWritesNothing) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = cases::build_eligibility_case(GetParam());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  StackedDeviceOptions o;
  o.path = StackedPathRequest::kFused;
  o.host_validation = false;
  // Every scenario is fused-ineligible too (a quantized layer, fp16, a bias, or layers that differ).
  try {
    const Status s = device().run(c, out, o);  // damage (a write by the rejected call) throws
    EXPECT_EQ(s.code, ErrorCode::kStackedPathIneligible) << s.ToString();
  } catch (const testkit::KernelCallError& e) {
    if (std::string(e.what()).find("402") == std::string::npos) throw;
    GTEST_SKIP() << "the library does not implement the fused path: " << e.what();
  }
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
  StackedCtxKvCase c = laid_out(testkit::small_stacked_case());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  GetParam().apply(c, out);
  StackedDeviceOptions o;
  o.host_validation = false;
  o.path = GetParam().path;
  const Status s = device().run(c, out, o);  // damage (a write by a rejected call) throws
  EXPECT_EQ(s.code, GetParam().code) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(Rules, StackedAbiValidation, ::testing::ValuesIn(abi_breakers()),
                         [](const ::testing::TestParamInfo<testkit::StackedRuleBreaker>& p) { return p.param.name; });

TEST(StackedAbiRequests, StackedParametersOfAnotherShapeAreE158) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = laid_out(testkit::small_stacked_case());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  for (testkit::StackedParamsDefect defect :
       {testkit::StackedParamsDefect::kOneRowShort, testkit::StackedParamsDefect::kBiasMissing}) {
    StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
    StackedDeviceOptions o;
    o.cache_loc = cache_loc_policy(c);
    o.path = StackedPathRequest::kStacked;
    o.params_defect = defect;
    const Status s = device().run(c, out, o);
    EXPECT_EQ(s.code, ErrorCode::kStackedParamsMismatch) << s.ToString();
  }
  // No stacked parameters at all: the stacked path cannot run (E158), AUTO runs per layer.
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  StackedDeviceOptions o;
  o.cache_loc = cache_loc_policy(c);
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
  StackedCtxKvCase c = laid_out(testkit::small_stacked_case());
  KVC_REQUIRE_STACKED_SUPPORT(c);
  testkit::make_ineligible(c, testkit::small_stacked_shape(), StackedIneligibility::kDtypeDiffers, 1);
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  StackedDeviceOptions o;
  o.cache_loc = cache_loc_policy(c);
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
  StackedCtxKvCase c = laid_out(testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kBF16, true)));
  KVC_REQUIRE_STACKED_SUPPORT(c);
  // Tokens 0-2 out of range (the ABI reads no values); tokens 3 and 4 are written.
  c.cache_loc.store<std::int64_t>(0, c.layers[0].k_pool.size(0));        // one past the pools
  c.cache_loc.store<std::int64_t>(1, std::int64_t{1} << 40);             // far past them
  c.positions.store<std::int64_t>(2, c.layers[1].cos_sin.meta.size(0));  // one past the table
  StackedCtxKvCase sanitized = c;
  for (std::int64_t t : {0, 1, 2}) sanitized.cache_loc.store<std::int64_t>(t, skip_entry(c));
  StackedDeviceOptions o;
  o.host_validation = false;
  // Judged as the oracle's run of the sanitized case, tokens 0-2 skipped, on every pool byte. The
  // skip is about the pools: the exact order's projection is not judged, and the any order's
  // budget only at the written tokens (its pools, every token, are its projection's epilogue).
  for (StackedGemm gemm : {StackedGemm::kExactOrder, StackedGemm::kAnyOrder}) {
    o.gemm = gemm;
    testkit::StackedRun run = testkit::run_stacked(device(), c, o, std::string("device ") + gemm_name(gemm));
    std::vector<std::int64_t> budget_tokens;
    if (gemm == StackedGemm::kExactOrder)
      run.projection.reset();
    else
      budget_tokens = {3, 4};
    const testkit::Verdict v =
        testkit::judge_stacked(sanitized, budget_tokens, gemm, {run}, reproduce("StackedDeviceSkip.*"),
                               device().case_profile(c.storage_dtype()));
    EXPECT_TRUE(gpu::passes(v, std::string("tokens 0-2 skipped, ") + gemm_name(gemm) + " GEMM"));
  }
}

// ---- the declared stacked profile ---------------------------------------------------------------

// Every token of the policy-sensitive shape against the oracle under the declared profile: where
// a library that declares another profile than the one it runs cannot pass by chance.
class StackedPolicySensitive : public ::testing::TestWithParam<cases::StackedSpec> {};

TEST_P(StackedPolicySensitive, ExactOrderEveryTokenUnderTheDeclaredProfile) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  KVC_REQUIRE_STACKED_SUPPORT(c);
  KVC_EXPECT_STACKED_CHECK(c, testkit::StackedCheck::kExactOrder, std::vector<std::int64_t>{},
                           "StackedPolicySensitive.*" + GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Shapes, StackedPolicySensitive, ::testing::ValuesIn(cases::stacked_policy_matrix()),
                         [](const ::testing::TestParamInfo<cases::StackedSpec>& p) { return p.param.name; });

TEST(StackedDeclaredProfile, EveryRunIsJudgedUnderThePolicyOfThePathItTookAndTheReportSaysWhich) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kF16, false));
  KVC_REQUIRE_STACKED_SUPPORT(c);
  StackedDeviceOptions o;
  o.cache_loc = cache_loc_policy(c);
  const testkit::StackedRun run = testkit::run_stacked(device(), laid_out(c), o, "device AUTO");
  ASSERT_TRUE(run.profile.has_value());
  EXPECT_EQ(*run.profile,
            device()
                .judged_profile(c.storage_dtype(), run.path == StackedPath::kStacked ? KVC_STACKED_PATH_STACKED
                                                                                     : KVC_STACKED_PATH_PER_LAYER)
                .profile);
  const testkit::Verdict v = testkit::check_stacked(device(), c, testkit::StackedCheck::kExactOrder, {},
                                                    reproduce("StackedDeclaredProfile.*"));
  std::printf("%s", v.report.c_str());
  EXPECT_NE(v.report.find("stacked profile `"), std::string::npos) << v.report;
  EXPECT_NE(v.report.find("declared for its"), std::string::npos) << v.report;
}

}  // namespace
}  // namespace kvc
