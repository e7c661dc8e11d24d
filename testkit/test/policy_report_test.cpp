// policy_report_test.cpp: the profile checker (testkit/policy_report.h), through the judge
// (judge.h), against planted backends.
//
// A planted backend runs the oracle under one profile and declares another, and can make
// SGLang's address mistakes. The checker must: pass a backend under the profile it declares;
// fail one whose bytes follow another profile and name exactly the policies they follow (one
// planted difference per policy, through the store op and the KV-only insert); and report stray
// writes as address errors naming the row and the slot that caused them, under every profile
// (slot -1 written at page -1 before the cache; the slot -2^62 written at page 0 token 0 over a
// foreign record).
//
// Catches: a checker that compares under the wrong profile, credits bytes to a policy they do not
// follow, misses one, or lets a profile excuse a write outside the addressed records.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "kvc/profile.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/planted/planted_backends.h"
#include "testkit/compare/judge.h"
#include "testkit/compare/policy_report.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"

namespace kvc {
namespace {

using kvc::Policy;
using kvc::Profile;
using testkit::AddressDefect;
using testkit::PlantedBackend;
using testkit::StorePages;

constexpr std::int64_t kPages = 4, kBlockSize = 16;

Profile spec(const char* s) { return *kvc::parse_profile(s); }

// 40 rows of every policy's edge values over 4 pages of 16, one row (row 2) with index -1.
StoreCase edge_store_case(RecordFormat f, StorePages pages, std::int64_t base_offset_bytes = 0) {
  testkit::Rng rng(11);
  std::vector<std::int64_t> indices = rng.distinct(kPages * kBlockSize, 40);
  indices[2] = -1;
  testkit::StoreShape shape{f, pages, kPages, kBlockSize, base_offset_bytes, DType::kI64};
  return testkit::make_store_case(shape, testkit::policy_edge_rows(40, 11), indices);
}

bool names_only(const testkit::PolicyReport& r, Policy p) {
  for (const testkit::PolicyGroup& g : r.groups)
    if (g.policies != std::vector<Policy>{p}) return false;
  return !r.groups.empty();
}

TEST(PolicyReport, PassesEveryBackendUnderTheProfileItDeclares) {
  for (const char* name : {"vllm", "sglang-store", "clamp=sglang,floor=after"}) {
    PlantedBackend honest(spec(name), spec(name));
    for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
      const testkit::Verdict check = testkit::run_and_judge_store(honest, edge_store_case(f, StorePages::kSglangFlat));
      EXPECT_TRUE(check.passed()) << check.report;
    }
  }
}

TEST(PolicyReport, SglangStoreBytesDeclaredVllmNameEveryObservablePolicy) {
  PlantedBackend sglang(kvc::sglang_store_profile(), kvc::vllm_profile());
  const testkit::Verdict check =
      testkit::run_and_judge_store(sglang, edge_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat));
  std::printf("%s", check.report.c_str());
  ASSERT_FALSE(check.passed());
  const testkit::PolicyReport& r = check.policy;
  EXPECT_TRUE(r.only_policies()) << r.text;
  ASSERT_TRUE(r.followed.has_value());
  // The exponent rule cannot show on bf16 rows (docs/contract.md §2.3): every other SGLang policy.
  EXPECT_EQ(*r.followed, spec("rope=none,clamp=sglang,inf=sglang,pad=keep")) << kvc::profile_name(*r.followed);
  std::set<Policy> named;
  for (const testkit::PolicyGroup& g : r.groups) named.insert(g.policies.begin(), g.policies.end());
  EXPECT_EQ(named, (std::set<Policy>{Policy::kRope, Policy::kClampOrder, Policy::kInfBlock, Policy::kPadByte}));
  // The Inf blocks' zeros need both: inv = -Inf makes them NaN, SGLang's clamp makes that 0x7E.
  const bool joint = std::any_of(r.groups.begin(), r.groups.end(), [](const testkit::PolicyGroup& g) {
    return g.field == testkit::ByteClass::kFp8Code &&
           g.policies == std::vector<Policy>{Policy::kClampOrder, Policy::kInfBlock};
  });
  EXPECT_TRUE(joint) << r.text;
  EXPECT_NE(r.text.find("follow clamp order `sglang` and Inf block `sglang`; declared profile `vllm`"),
            std::string::npos)
      << r.text;
}

struct PlantedPolicy {
  const char* profile;
  Policy policy;
  RecordFormat format;
};

TEST(PolicyReport, EachPolicyAlonePlantedIsNamedAlone) {
  const PlantedPolicy planted[] = {
      {"rope=none", Policy::kRope, RecordFormat::kPacked584},
      {"clamp=sglang", Policy::kClampOrder, RecordFormat::kPacked584},
      {"clamp=sglang", Policy::kClampOrder, RecordFormat::kPacked528},
      {"inf=sglang", Policy::kInfBlock, RecordFormat::kPacked584},
      {"pad=keep", Policy::kPadByte, RecordFormat::kPacked584},
      {"floor=after", Policy::kFloorPlacement, RecordFormat::kPacked528},
      {"floor=after", Policy::kFloorPlacement, RecordFormat::kPacked584},
  };
  for (const PlantedPolicy& p : planted) {
    SCOPED_TRACE(std::string(p.profile) + " on " + std::string(layout_of(p.format).name));
    PlantedBackend backend(spec(p.profile), kvc::vllm_profile());
    const testkit::Verdict check =
        testkit::run_and_judge_store(backend, edge_store_case(p.format, StorePages::kPagedView));
    EXPECT_FALSE(check.passed());
    EXPECT_TRUE(check.policy.only_policies()) << check.report;
    ASSERT_TRUE(check.policy.followed.has_value()) << check.report;
    EXPECT_EQ(*check.policy.followed, spec(p.profile)) << check.report;
    EXPECT_TRUE(names_only(check.policy, p.policy)) << check.report;
  }
}

TEST(PolicyReport, ThroughTheKvOnlyInsertToo) {
  for (const auto& [name, policy, format] :
       {std::make_tuple("clamp=sglang", Policy::kClampOrder, RecordFormat::kFp8_512),
        std::make_tuple("rope=none", Policy::kRope, RecordFormat::kBf16_512),
        std::make_tuple("pad=keep", Policy::kPadByte, RecordFormat::kPacked584),
        std::make_tuple("inf=sglang", Policy::kInfBlock, RecordFormat::kPacked528)}) {
    SCOPED_TRACE(name);
    InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, format, 3);
    c.kv = make_tensor_from(DType::kBF16, testkit::policy_edge_rows(c.num_rows(), 3), {c.num_rows(), kHeadDim});
    PlantedBackend backend(spec(name), kvc::vllm_profile());
    const testkit::Verdict check = testkit::run_and_judge_insert(backend, c);
    EXPECT_FALSE(check.passed());
    EXPECT_TRUE(check.policy.only_policies()) << check.report;
    EXPECT_TRUE(names_only(check.policy, policy)) << check.report;
  }
}

TEST(PolicyReport, TheExponentRuleCannotShowOnBf16Rows) {
  // Both rules agree for every bf16 amax (docs/contract.md §2.3; the primitive-level difference is
  // in profile_test): a backend with the exact rule writes vllm's bytes on every case.
  PlantedBackend exact(spec("exponent=exact"), kvc::vllm_profile());
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    const testkit::Verdict check = testkit::run_and_judge_store(exact, edge_store_case(f, StorePages::kPagedView));
    EXPECT_TRUE(check.passed()) << check.report;
  }
}

// ---- address errors ----------------------------------------------------------------------------

TEST(PolicyReportAddress, SlotMinusOneAtPageMinusOneIsAnAddressErrorUnderEveryProfile) {
  for (const char* name : {"vllm", "sglang-store"}) {
    SCOPED_TRACE(name);
    // SGLang's convention, the cache one page into its backing so that page -1 is host memory.
    const std::int64_t page = sglang_page_stride_bytes(RecordFormat::kPacked584, kBlockSize);
    const StoreCase c = edge_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat, page);
    PlantedBackend backend(spec(name), spec(name), AddressDefect::kNegativeSlotFloorPage);
    const testkit::Verdict check = testkit::run_and_judge_store(backend, c);
    EXPECT_FALSE(check.passed()) << "a profile excused a write before the cache";
    const testkit::PolicyReport& r = check.policy;
    EXPECT_EQ(r.record_bytes, 0) << "the addressed records are right: " << r.text;
    EXPECT_GT(r.address_error_bytes, 500) << r.text;
    EXPECT_EQ(r.unattributed_address_bytes, 0) << r.text;
    ASSERT_EQ(r.culprits.size(), 1u) << r.text;
    EXPECT_EQ(r.culprits[0].row, 2);
    EXPECT_EQ(r.culprits[0].slot, -1);
    EXPECT_EQ(r.culprits[0].page, -1);
    EXPECT_EQ(r.culprits[0].token, kBlockSize - 1);
    EXPECT_NE(r.culprits[0].arithmetic.find("floor division"), std::string::npos);
    EXPECT_NE(r.culprits[0].where.find("before the cache"), std::string::npos);
    EXPECT_NE(r.text.find("row 2 (slot -1) addressed by floor division"), std::string::npos) << r.text;
  }
}

TEST(PolicyReportAddress, HugeNegativeSlotTruncatedToPageZeroOverwritesAForeignSlot) {
  testkit::StoreShape shape{RecordFormat::kPacked584, StorePages::kSglangFlat, kPages, kBlockSize, 0, DType::kI64};
  const std::int64_t huge = -(std::int64_t{1} << 62);
  const StoreCase c = testkit::make_store_case(shape, testkit::policy_edge_rows(4, 5), {5, 9, huge, 33});
  PlantedBackend backend(kvc::sglang_store_profile(), kvc::sglang_store_profile(),
                         AddressDefect::kPageTruncatedTo32Bits);
  const testkit::Verdict check = testkit::run_and_judge_store(backend, c);
  EXPECT_FALSE(check.passed());
  const testkit::PolicyReport& r = check.policy;
  EXPECT_EQ(r.record_bytes, 0) << r.text;
  EXPECT_GT(r.address_error_bytes, 500) << r.text;
  EXPECT_EQ(r.unattributed_address_bytes, 0) << r.text;
  ASSERT_EQ(r.culprits.size(), 1u) << r.text;
  EXPECT_EQ(r.culprits[0].row, 2);
  EXPECT_EQ(r.culprits[0].slot, huge);
  EXPECT_EQ(r.culprits[0].page, 0);
  EXPECT_EQ(r.culprits[0].token, 0);
  EXPECT_NE(r.culprits[0].arithmetic.find("truncated to 32 bits"), std::string::npos) << r.culprits[0].arithmetic;
  EXPECT_NE(r.culprits[0].where.find("foreign slot 0"), std::string::npos) << r.culprits[0].where;
}

TEST(PolicyReportAddress, InsertOpStrayWritesAreNamedToo) {
  testkit::CacheShape shape{RecordFormat::kPacked528, 2, kBlockSize, 0, 0, 0};
  shape.base_offset_bytes = layout_of(RecordFormat::kPacked528).dense_page_bytes(kBlockSize);
  testkit::Rng rng(9);
  testkit::KvInputs in;
  in.kv = testkit::random_bf16_rows(rng, 4);
  in.slots = {3, -1, 20, 7};
  in.positions = {0, 1, 2, 3};
  in.cos_sin = testkit::random_cos_sin(rng, 8);
  const InsertCase c = testkit::make_kv_only_case(shape, in);
  PlantedBackend backend(kvc::vllm_profile(), kvc::vllm_profile(), AddressDefect::kNegativeSlotFloorPage);
  const testkit::Verdict check = testkit::run_and_judge_insert(backend, c);
  EXPECT_FALSE(check.passed());
  ASSERT_EQ(check.policy.culprits.size(), 1u) << check.report;
  EXPECT_EQ(check.policy.culprits[0].row, 1);
  EXPECT_EQ(check.policy.culprits[0].slot, -1);
  EXPECT_EQ(check.policy.unattributed_address_bytes, 0) << check.report;
}

TEST(PolicyReportAddress, CulpritsFromDeviceGuardOffsets) {
  // A device guard zone reports offsets before the payload as negative: the same attribution.
  const StoreCase c = edge_store_case(RecordFormat::kPacked584, StorePages::kPagedView);
  const oracle::PagedCacheView v = oracle::store_view(c);
  std::vector<std::int64_t> slots;
  for (std::int64_t t = 0; t < c.num_rows(); ++t) slots.push_back(c.index(t));
  // Page -1 token 15's first two data bytes (slot -1 by floor division), 768 and 767 bytes before
  // the cache: out of reach of the other models (truncating division puts token -1 of page 0 at
  // [-576, 0)).
  const std::int64_t data = -v.page_stride_bytes + 576 * (kBlockSize - 1);
  const auto culprits = testkit::address_culprits(v, slots, {data, data + 1});
  ASSERT_EQ(culprits.size(), 1u);
  EXPECT_EQ(culprits[0].row, 2);
  EXPECT_EQ(culprits[0].page, -1);
  EXPECT_EQ(culprits[0].bytes, 2);
  EXPECT_TRUE(testkit::address_culprits(v, slots, {v.page_stride_bytes / 2}).empty())
      << "a byte inside a page no negative slot maps to has no culprit";
}

}  // namespace
}  // namespace kvc
