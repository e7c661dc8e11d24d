// declared_stacked_profile_test.cpp: the stacked policies kernel libraries declare (kernel ABI 1.3,
// kvc/abi/stacked_policies.h), read through the suite (DeclaredSupport) and turned into the
// profile each run is judged under (StackedCtxKvDevice::judged_profile, case_profile), on our
// kernels, the stacked policy doubles and a library built against ABI 1.1. Host code only: no
// device is needed, so this runs in CI.
// Catches: a declaration read from another op (a double's op 4 profile lost, or op 6's used for
// the per-layer path); a library built before 1.3 asked op 6 or read as having a fused path, or its
// op 4 read as anything but the contract; a fused run judged under op 4's declaration; an override
// (--stacked-profile) that does not win over the declaration, or whose source is not named; cases
// laid out for another cache_loc policy than the per-layer path's.
#include <gtest/gtest.h>

#include <string>

#include "kvc/abi/stacked_policies.h"
#include "testkit/device/declared_support.h"
#include "testkit/device/stacked_ctx_kv_device.h"

namespace kvc::testkit {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

StackedProfile spec(const char* s) {
  const auto p = parse_stacked_profile(s);
  EXPECT_TRUE(p.has_value()) << s;
  return p.value_or(StackedProfile{});
}

// Our fused path (stacked_ctx_kv_fused.cu) takes the fused-eligible models, which are bf16 only
// (docs/contract.md §4.5): op 6 is supported for bf16 under the contract, and not for fp16.
TEST(DeclaredStackedProfile, OursDeclaresTheContractOnEveryPathAndABf16FusedPath) {
  const DeclaredSupport declared(KernelLibrary::builtin());
  for (DType d : {DType::kBF16, DType::kF16}) {
    const Declaration& op4 = declared.of(KVC_OP_STACKED_CTX_KV, KVC_FORMAT_NONE, d);
    ASSERT_TRUE(op4.supported) << op4.reason;
    EXPECT_EQ(op4.stacked_profile, contract_stacked_profile());
    const Declaration& fused = declared.of(KVC_OP_STACKED_CTX_KV_FUSED, KVC_FORMAT_NONE, d);
    EXPECT_EQ(fused.supported, d == DType::kBF16) << fused.reason;
    if (fused.supported) {
      EXPECT_EQ(fused.stacked_profile, contract_stacked_profile());
    }
  }
}

TEST(DeclaredStackedProfile, EachPolicyDoubleDeclaresWhatItRunsAndItsTwinTheContract) {
  struct Double {
    const char* path;
    const char* twin;
    const char* runs;
  };
  for (const Double& d :
       {Double{KVC_DOUBLE_STACKED_ROPE, KVC_DOUBLE_STACKED_ROPE_AS_CONTRACT, "rope=fma-pair"},
        Double{KVC_DOUBLE_STACKED_SLOT0, KVC_DOUBLE_STACKED_SLOT0_AS_CONTRACT, "cache-loc=slot0-reserved"},
        Double{KVC_DOUBLE_STACKED_SGLANG, KVC_DOUBLE_STACKED_SGLANG_AS_CONTRACT, "sglang-dspark-stacked"}}) {
    const StackedCtxKvDevice honest(KernelLibrary::open(d.path));
    EXPECT_EQ(honest.judged_profile(DType::kF16, KVC_STACKED_PATH_STACKED).profile, spec(d.runs)) << d.path;
    EXPECT_EQ(honest.judged_profile(DType::kF16, KVC_STACKED_PATH_PER_LAYER).profile, spec(d.runs)) << d.path;
    EXPECT_EQ(honest.case_profile(DType::kBF16), spec(d.runs)) << d.path;
    EXPECT_TRUE(contains(honest.judged_profile(DType::kF16, KVC_STACKED_PATH_STACKED).source,
                         "declared for its per-layer and stacked paths"));
    // The fused path: its own query (op 6), which the doubles leave ours: unsupported.
    const JudgedStackedProfile fused = honest.judged_profile(DType::kF16, KVC_STACKED_PATH_FUSED);
    EXPECT_EQ(fused.profile, contract_stacked_profile());
    EXPECT_TRUE(contains(fused.source, "fused path declared unsupported")) << fused.source;
    const StackedCtxKvDevice twin(KernelLibrary::open(d.twin));
    EXPECT_EQ(twin.case_profile(DType::kF16), contract_stacked_profile()) << d.twin;
  }
}

TEST(DeclaredStackedProfile, TheOverrideWinsAndSaysSo) {
  StackedCtxKvDevice device(KernelLibrary::open(KVC_DOUBLE_STACKED_ROPE));
  device.set_profile_override(spec("sglang-dspark-fused"));
  const JudgedStackedProfile j = device.judged_profile(DType::kBF16, KVC_STACKED_PATH_STACKED);
  EXPECT_EQ(j.profile, sglang_dspark_fused_profile());
  EXPECT_EQ(j.source, "--stacked-profile");
  EXPECT_EQ(device.case_profile(DType::kBF16), sglang_dspark_fused_profile());
}

TEST(DeclaredStackedProfile, ALibraryBuiltBefore13HasTheContractAndNoFusedPath) {
  const DeclaredSupport declared(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_ONLY_ABI11));
  ASSERT_LT(declared.library().abi_version(), abi::kAbiVersionWithStackedPolicies);
  const Declaration& fused = declared.of(KVC_OP_STACKED_CTX_KV_FUSED, KVC_FORMAT_NONE, DType::kBF16);
  EXPECT_FALSE(fused.supported);
  EXPECT_EQ(fused.reason, "built against ABI 1.x: no fused stacked path");
  EXPECT_EQ(declared.of(KVC_OP_STACKED_CTX_KV, KVC_FORMAT_NONE, DType::kBF16).stacked_profile,
            contract_stacked_profile());
}

}  // namespace
}  // namespace kvc::testkit
