// stacked_policies_test.cpp: kvc_op_support's 1.3 stacked policy fields read (read_stacked_profile)
// and written (declare_stacked_policies), kvc/abi/stacked_policies.h.
// Catches: a field decoded from another member or as another alternative (a library declaring the
// CUDA rope pair judged under the contract's rotation, or a lane tree judged as sequential); a
// library built against 1.2, or a struct_size that stops before the fields, read as declaring
// anything but the contract (stale bytes would pick the policies it is judged under); a value
// outside an enum accepted silently instead of refused naming the field; a writer that writes past
// the caller's struct_size; the fused path's query not op 6 or a path other than the fused one
// judged under op 6's declaration.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/stacked_policies.h"
#include "kvc/abi/struct_size.h"

namespace kvc::abi {
namespace {

constexpr std::int32_t kAbi12 = 1002, kAbi13 = 1003;

kvc_op_support zeroed() {
  kvc_op_support s{};
  s.struct_size = sizeof s;
  s.supported = 1;
  return s;
}

std::string refusal(const kvc_op_support& s) {
  try {
    (void)read_stacked_profile(s, kAbi13);
  } catch (const CapabilityError& e) {
    return e.what();
  }
  return "";
}

TEST(AbiStackedPolicies, TheOpsAndVersionsAreTheHeadersOnes) {
  EXPECT_EQ(KVC_KERNEL_ABI_VERSION, kAbiVersionWithStackedPolicies);
  EXPECT_EQ(KVC_OP_STACKED_CTX_KV_FUSED, 6);
  EXPECT_TRUE(has_stacked_policies(KVC_OP_STACKED_CTX_KV));
  EXPECT_TRUE(has_stacked_policies(KVC_OP_STACKED_CTX_KV_FUSED));
  EXPECT_FALSE(has_stacked_policies(KVC_OP_KV_ONLY_INSERT_KV_NORM));
  EXPECT_EQ(stacked_declaration_op(KVC_STACKED_PATH_FUSED), KVC_OP_STACKED_CTX_KV_FUSED);
  for (std::int32_t path : {KVC_STACKED_PATH_AUTO, KVC_STACKED_PATH_PER_LAYER, KVC_STACKED_PATH_STACKED})
    EXPECT_EQ(stacked_declaration_op(path), KVC_OP_STACKED_CTX_KV) << path;
}

TEST(AbiStackedPolicies, AZeroedStructDeclaresTheContract) {
  EXPECT_EQ(read_stacked_profile(zeroed(), kAbi13), contract_stacked_profile());
}

TEST(AbiStackedPolicies, EveryProfileRoundTripsThroughTheFields) {
  for (int rope = 0; rope < alternatives_of(StackedPolicy::kRope); ++rope)
    for (int reduction = 0; reduction < alternatives_of(StackedPolicy::kReduction); ++reduction)
      for (int reciprocal = 0; reciprocal < alternatives_of(StackedPolicy::kReciprocal); ++reciprocal)
        for (int loc = 0; loc < alternatives_of(StackedPolicy::kCacheLoc); ++loc) {
          StackedProfile p;
          p = with_alternative(p, StackedPolicy::kRope, rope);
          p = with_alternative(p, StackedPolicy::kReduction, reduction);
          p = with_alternative(p, StackedPolicy::kReciprocal, reciprocal);
          p = with_alternative(p, StackedPolicy::kCacheLoc, loc);
          kvc_op_support s = zeroed();
          declare_stacked_policies(p, &s);
          EXPECT_EQ(s.stacked_rope, rope);
          EXPECT_EQ(s.k_norm_reduction, reduction);
          EXPECT_EQ(s.k_norm_reciprocal, reciprocal);
          EXPECT_EQ(s.cache_loc, loc);
          EXPECT_EQ(read_stacked_profile(s, kAbi13), p) << stacked_profile_name(p);
        }
}

TEST(AbiStackedPolicies, TheNamedProfilesAsFields) {
  kvc_op_support s = zeroed();
  declare_stacked_policies(sglang_dspark_stacked_profile(), &s);
  EXPECT_EQ(s.stacked_rope, KVC_STACKED_ROPE_FMA_PAIR);
  EXPECT_EQ(s.k_norm_reduction, KVC_K_NORM_UNSPECIFIED);
  EXPECT_EQ(s.k_norm_reciprocal, KVC_K_NORM_RSQRT_RN);
  EXPECT_EQ(s.cache_loc, KVC_CACHE_LOC_SLOT0_RESERVED);
  declare_stacked_policies(sglang_dspark_fused_profile(), &s);
  EXPECT_EQ(s.stacked_rope, KVC_STACKED_ROPE_CONTRACT);
  EXPECT_EQ(s.k_norm_reduction, KVC_K_NORM_LANE_TREE);
  EXPECT_EQ(s.k_norm_reciprocal, KVC_K_NORM_RECIPROCAL_APPROX);
  EXPECT_EQ(s.cache_loc, KVC_CACHE_LOC_SKIP_NEGATIVE);
}

TEST(AbiStackedPolicies, ALibraryBuiltAgainst12DeclaresTheContractWhateverTheBytes) {
  kvc_op_support s = zeroed();
  declare_stacked_policies(sglang_dspark_stacked_profile(), &s);  // stale bytes a 1.2 library never wrote
  EXPECT_EQ(read_stacked_profile(s, kAbi12), contract_stacked_profile());
  s.stacked_rope = 9;  // not even read
  EXPECT_EQ(read_stacked_profile(s, kAbi12), contract_stacked_profile());
}

TEST(AbiStackedPolicies, AStructSizeBeforeTheFieldsDeclaresTheContractAndIsNotWritten) {
  kvc_op_support s = zeroed();
  declare_stacked_policies(sglang_dspark_stacked_profile(), &s);
  s.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, enforced_codes));
  EXPECT_EQ(read_stacked_profile(s, kAbi13), contract_stacked_profile());
  s.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, k_norm_reciprocal));  // cache_loc cut off
  EXPECT_EQ(read_stacked_profile(s, kAbi13), contract_stacked_profile());

  kvc_op_support short_struct{};
  short_struct.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, enforced_codes));
  std::memset(&short_struct.stacked_rope, 0x5A, sizeof(kvc_op_support) - offsetof(kvc_op_support, stacked_rope));
  declare_stacked_policies(sglang_dspark_stacked_profile(), &short_struct);
  EXPECT_EQ(short_struct.stacked_rope, 0x5A5A5A5A) << "written past the caller's struct_size";
  EXPECT_EQ(short_struct.cache_loc, 0x5A5A5A5A) << "written past the caller's struct_size";
}

TEST(AbiStackedPolicies, AValueNoAlternativeHasIsRefusedNamingTheField) {
  struct Bad {
    std::int32_t kvc_op_support::*field;
    std::int32_t value;
    const char* name;
  };
  for (const Bad& b : {Bad{&kvc_op_support::stacked_rope, 2, "stacked_rope"},
                       Bad{&kvc_op_support::k_norm_reduction, 3, "k_norm_reduction"},
                       Bad{&kvc_op_support::k_norm_reciprocal, -1, "k_norm_reciprocal"},
                       Bad{&kvc_op_support::cache_loc, 7, "cache_loc"}}) {
    kvc_op_support s = zeroed();
    s.*b.field = b.value;
    const std::string why = refusal(s);
    EXPECT_NE(why.find(std::string("kvc_op_support.") + b.name + " = " + std::to_string(b.value)), std::string::npos)
        << why;
  }
  kvc_op_support s = zeroed();
  s.k_norm_reduction = KVC_K_NORM_UNSPECIFIED;  // the one policy with three alternatives
  EXPECT_EQ(refusal(s), "");
}

}  // namespace
}  // namespace kvc::abi
