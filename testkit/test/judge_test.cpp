// judge_test.cpp: the judge (testkit/compare/judge.h) on planted differences.
//
// - One byte changed in every byte class of the cache (fp8 code, 16-bit value, scale, scale pad,
//   page padding, foreign slot, row gap, guard zone) and in q_out: a mismatch, located in the
//   report with its expected and actual bytes. Catches a judge that compares part of the outputs.
// - Statuses: a valid case rejected, an invalid one accepted (status differs, nothing compared),
//   an invalid one rejected with the oracle's code (passes, every byte compared) or rejected
//   after writing (fails). Catches a judge that passes on status alone or ignores a rejection's
//   writes.
// - The declared profile: a planted CPU backend that writes SGLang's bytes (the oracle under
//   `sglang-store`) passes declaring `sglang-store` and fails declaring `vllm`, with the report
//   naming the SGLang policies, through the insert and the store op. Catches a judge that compares
//   under the contract's profile whatever the library declares, or under the one the bytes follow.
// - The declared rsqrt: a kv_norm record made with r + 1 ulp passes under a declared approximate
//   rsqrt and fails under the correctly rounded one.
// - The oracle runs once per judgment, whatever the verdict (OracleBackend::runs_so_far()).
//   Catches the duplicated runs of the checks the judge replaced (status, profile, rsqrt: three).
#include <gtest/gtest.h>

#include <cstdio>
#include <utility>

#include "kvc/oracle/record_codec.h"
#include "kvc/profile.h"
#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/judge.h"
#include "testkit/planted/planted_backends.h"

namespace kvc {
namespace {

using testkit::VerdictKind;

// The oracle's outputs of a small valid case of `op` and `f`, under the contract's profile.
struct Judged {
  InsertCase c;
  InsertOutputs oracle;
};

Judged small(InsertOp op, RecordFormat f) {
  Judged j{testkit::small_valid_case(op, f), {}};
  j.oracle = testkit::make_outputs(j.c);
  EXPECT_TRUE(testkit::OracleBackend().run(j.c, j.oracle).ok());
  return j;
}

std::string expected_actual(std::uint8_t expected, std::uint8_t actual) {
  char text[48];
  std::snprintf(text, sizeof text, "expected 0x%02x actual 0x%02x", expected, actual);
  return text;
}

// The oracle's cache with byte `offset` flipped, judged: a mismatch whose report names the byte,
// its class and `mentions`.
void expect_caught(const Judged& j, testkit::ByteClass cls, std::int64_t offset, const std::string& mention) {
  SCOPED_TRACE(std::string(testkit::name(cls)) + " at offset " + std::to_string(offset));
  InsertOutputs actual = j.oracle;
  actual.cache[static_cast<std::size_t>(offset)] ^= 0x01;
  const std::uint8_t was = j.oracle.cache[static_cast<std::size_t>(offset)];
  const testkit::Verdict v = testkit::judge_insert(j.c, kvc::vllm_profile(), Status::Ok(), std::move(actual));
  EXPECT_EQ(v.kind, VerdictKind::kMismatch) << v.report;
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.compared_bytes, static_cast<std::int64_t>(j.oracle.cache.size() + j.oracle.q_out.size()));
  EXPECT_EQ(v.policy.mismatching_bytes, 1) << v.report;
  EXPECT_EQ(v.expected.cache, j.oracle.cache) << "the verdict carries the oracle's bytes";
  EXPECT_NE(v.report.find(expected_actual(was, was ^ 0x01)), std::string::npos) << v.report;
  EXPECT_NE(v.report.find(mention), std::string::npos) << "missing '" << mention << "' in\n" << v.report;
  EXPECT_FALSE(v.classes.empty()) << "a mismatch's record is classified";
}

TEST(Judge, TheOraclesOwnBytesMatchWithEveryByteCompared) {
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
    for (RecordFormat f : kAllFormats) {
      SCOPED_TRACE(std::string(layout_of(f).name));
      const Judged j = small(op, f);
      const testkit::Verdict v = testkit::judge_insert(j.c, kvc::vllm_profile(), Status::Ok(), j.oracle);
      EXPECT_EQ(v.kind, VerdictKind::kMatch) << v.report;
      EXPECT_TRUE(v.passed());
      EXPECT_EQ(v.compared_bytes, static_cast<std::int64_t>(j.oracle.cache.size() + j.oracle.q_out.size()));
      EXPECT_NE(v.report.find("every byte equal"), std::string::npos) << v.report;
    }
}

TEST(Judge, CatchesOnePlantedByteInEveryPackedClass) {
  const Judged j = small(InsertOp::kKvOnly, RecordFormat::kPacked584);
  const oracle::PagedCacheView view = testkit::view_of(j.c);
  const std::set<std::int64_t> addressed = testkit::addressed_slots(j.c);
  const std::int64_t live = *addressed.begin();
  std::int64_t foreign = 0;
  while (addressed.count(foreign)) ++foreign;
  const std::int64_t data = oracle::token_data_offset(view, live), scales = oracle::token_scale_offset(view, live);
  expect_caught(j, testkit::ByteClass::kFp8Code, data + 70, "dim 70");
  expect_caught(j, testkit::ByteClass::kValue16, data + 448 + 2 * 5 + 1, "dim 453");
  expect_caught(j, testkit::ByteClass::kScale, scales + 3, "block 3");
  expect_caught(j, testkit::ByteClass::kScalePad, scales + 7, "pad");
  expect_caught(j, testkit::ByteClass::kPagePadding, view.page_offset(1) + 584 * view.block_size + 3, "page padding");
  expect_caught(j, testkit::ByteClass::kForeignSlot, oracle::token_data_offset(view, foreign) + 2, "ADDRESS ERRORS");
  expect_caught(j, testkit::ByteClass::kOutsideCache, static_cast<std::int64_t>(j.oracle.cache.size()) - 1,
                "guard zone");
}

TEST(Judge, CatchesOnePlantedByteInARowGap) {
  const Judged j = small(InsertOp::kKvOnly, RecordFormat::kBf16_512);
  const std::int64_t row = oracle::token_data_offset(testkit::view_of(j.c), *testkit::addressed_slots(j.c).begin());
  expect_caught(j, testkit::ByteClass::kRowGap, row + 1024 + 3, "row gap");
}

TEST(Judge, CatchesOnePlantedByteInQOut) {
  const Judged j = small(InsertOp::kLegacy, RecordFormat::kPacked584);
  ASSERT_FALSE(j.oracle.q_out.empty());
  InsertOutputs actual = j.oracle;
  actual.q_out[5] ^= 0x01;
  const testkit::Verdict v = testkit::judge_insert(j.c, kvc::vllm_profile(), Status::Ok(), std::move(actual));
  EXPECT_EQ(v.kind, VerdictKind::kMismatch) << v.report;
  EXPECT_TRUE(v.policy.equal()) << "the cache is the oracle's";
  EXPECT_NE(v.report.find("q_out byte 5 (token 0 head 0 dim 2)"), std::string::npos) << v.report;
  EXPECT_NE(v.report.find(expected_actual(j.oracle.q_out[5], j.oracle.q_out[5] ^ 0x01)), std::string::npos) << v.report;
}

// The rule breaker named `name`, applied to a small valid case of `op` and `f`.
struct Broken {
  InsertCase c;
  InsertOutputs initial;
  ErrorCode code = ErrorCode::kOk;
};

Broken broken(const std::string& name, InsertOp op, RecordFormat f) {
  Broken b{testkit::small_valid_case(op, f), {}, ErrorCode::kOk};
  b.initial = testkit::make_outputs(b.c);
  for (const testkit::RuleBreaker& r : testkit::rule_breakers())
    if (r.name == name) {
      EXPECT_TRUE(r.apply(b.c, b.initial)) << name;
      b.code = r.code;
    }
  EXPECT_NE(b.code, ErrorCode::kOk) << "no rule breaker " << name;
  return b;
}

TEST(Judge, AValidCaseRejectedIsAStatusDifferenceWithNothingCompared) {
  const Judged j = small(InsertOp::kKvOnly, RecordFormat::kPacked528);
  const testkit::Verdict v =
      testkit::judge_insert(j.c, kvc::vllm_profile(), Error(ErrorCode::kDuplicateSlot), testkit::make_outputs(j.c));
  EXPECT_EQ(v.kind, VerdictKind::kStatusDiffers) << v.report;
  EXPECT_EQ(v.compared_bytes, 0);
  EXPECT_NE(v.report.find("status differs from the oracle's"), std::string::npos) << v.report;
}

TEST(Judge, AnInvalidCaseAcceptedIsAStatusDifference) {
  const Broken b = broken("DuplicateSlot", InsertOp::kKvOnly, RecordFormat::kPacked584);
  const testkit::Verdict v = testkit::judge_insert(b.c, kvc::vllm_profile(), Status::Ok(), b.initial, b.initial);
  EXPECT_EQ(v.kind, VerdictKind::kStatusDiffers) << v.report;
  EXPECT_EQ(v.oracle_status.code, b.code);
  EXPECT_FALSE(v.passed());
}

TEST(Judge, ARejectionWithTheOraclesCodePassesUnlessItWrote) {
  const Broken b = broken("DuplicateSlot", InsertOp::kLegacy, RecordFormat::kFp8_512);
  const testkit::Verdict alike = testkit::judge_insert(b.c, kvc::vllm_profile(), Error(b.code), b.initial, b.initial);
  EXPECT_EQ(alike.kind, VerdictKind::kRejectedAlike) << alike.report;
  EXPECT_TRUE(alike.passed());
  EXPECT_EQ(alike.compared_bytes, static_cast<std::int64_t>(b.initial.cache.size() + b.initial.q_out.size()));
  InsertOutputs wrote = b.initial;
  wrote.q_out[3] ^= 0xFF;
  const testkit::Verdict v = testkit::judge_insert(b.c, kvc::vllm_profile(), Error(b.code), b.initial, wrote);
  EXPECT_EQ(v.kind, VerdictKind::kWroteWhenRejected) << v.report;
  EXPECT_NE(v.report.find("q_out: 1 bytes changed, the first at offset 3"), std::string::npos) << v.report;
}

// ---- the declared profile: SGLang's bytes declared as `sglang-store`, and as `vllm` -------------

// 40 rows of every policy's edge values through the KV-only insert (packed584: every SGLang
// policy that bf16 rows can show).
InsertCase edge_insert_case() {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584, 3);
  c.kv = make_tensor_from(DType::kBF16, testkit::policy_edge_rows(c.num_rows(), 3), {c.num_rows(), kHeadDim});
  return c;
}

StoreCase edge_store_case() {
  return testkit::small_valid_store_case(RecordFormat::kPacked584, testkit::StorePages::kSglangFlat);
}

void expect_names_the_sglang_policies(const testkit::Verdict& v) {
  EXPECT_EQ(v.kind, VerdictKind::kMismatch) << v.report;
  EXPECT_TRUE(v.policy.only_policies()) << v.report;
  for (const char* policy : {"clamp order `sglang`", "Inf block `sglang`", "declared profile `vllm`"})
    EXPECT_NE(v.report.find(policy), std::string::npos) << "missing '" << policy << "' in\n" << v.report;
}

TEST(JudgeProfile, SglangBytesPassDeclaredSglangStoreAndFailDeclaredVllm) {
  testkit::PlantedBackend honest(kvc::sglang_store_profile(), kvc::sglang_store_profile());
  testkit::PlantedBackend mislabelled(kvc::sglang_store_profile(), kvc::vllm_profile());
  const InsertCase c = edge_insert_case();
  const testkit::Verdict pass = testkit::run_and_judge_insert(honest, c);
  EXPECT_EQ(pass.kind, VerdictKind::kMatch) << pass.report;
  EXPECT_EQ(pass.profile, kvc::sglang_store_profile());
  const testkit::Verdict fail = testkit::run_and_judge_insert(mislabelled, c);
  expect_names_the_sglang_policies(fail);
  EXPECT_EQ(fail.actual.cache, pass.actual.cache) << "the same bytes, judged under two declarations";
  ASSERT_TRUE(fail.policy.followed.has_value());
  EXPECT_EQ(fail.policy.followed->clamp_order, kvc::ClampOrder::kMinThenMax);
}

TEST(JudgeProfile, TheStoreOpToo) {
  testkit::PlantedBackend honest(kvc::sglang_store_profile(), kvc::sglang_store_profile());
  testkit::PlantedBackend mislabelled(kvc::sglang_store_profile(), kvc::vllm_profile());
  const testkit::Verdict pass = testkit::run_and_judge_store(honest, edge_store_case());
  EXPECT_EQ(pass.kind, VerdictKind::kMatch) << pass.report;
  EXPECT_EQ(pass.compared_bytes, static_cast<std::int64_t>(pass.actual.cache.size()));
  expect_names_the_sglang_policies(testkit::run_and_judge_store(mislabelled, edge_store_case()));
}

TEST(JudgeProfile, ContractBytesDeclaredSglangStoreFailToo) {
  // The other way round: a library that writes the contract's bytes but declares SGLang's.
  testkit::PlantedBackend b(kvc::vllm_profile(), kvc::sglang_store_profile());
  const testkit::Verdict v = testkit::run_and_judge_insert(b, edge_insert_case());
  EXPECT_EQ(v.kind, VerdictKind::kMismatch) << v.report;
  EXPECT_NE(v.report.find("declared profile `sglang-store`"), std::string::npos) << v.report;
}

// ---- the declared rsqrt ----------------------------------------------------------------------------

// bf16_512 with kv_norm fused (weight 1, eps 931.5) on rows whose r sits at a bf16 midpoint (dim
// 0 = 4096, dim 1 = 1; approx_rsqrt_test derives it): r + 1 ulp changes their records.
InsertCase kv_norm_midpoint_case() {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512, 3);
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    for (int d = 0; d < kHeadDim; ++d)
      c.kv.store<std::uint16_t>(t * kHeadDim + d, d == 0 ? 0x4580 : d == 1 ? 0x3F80 : 0);
  c.kv_norm_weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  c.kv_norm_eps = 931.5f;
  return c;
}

TEST(JudgeRsqrt, ARecordMadeWithROneUlpUpPassesOnlyUnderTheDeclaredApproximation) {
  const InsertCase c = kv_norm_midpoint_case();
  InsertOutputs planted = testkit::make_outputs(c);
  ASSERT_TRUE(testkit::OracleBackend().run(c, planted).ok());
  const InsertOutputs exact = planted;
  testkit::rewrite_norm_row(c, testkit::norm_rows(c).front(), 1, planted);
  ASSERT_NE(planted.cache, exact.cache) << "r + 1 ulp must change the record";
  kvc::Profile approximate = kvc::vllm_profile();
  approximate.rsqrt = RsqrtMode::kApproximate;
  const testkit::Verdict granted = testkit::judge_insert(c, approximate, Status::Ok(), planted);
  EXPECT_EQ(granted.kind, VerdictKind::kMatch) << granted.report;
  ASSERT_EQ(granted.rsqrt.moved.size(), 1u) << granted.report;
  EXPECT_EQ(granted.rsqrt.moved[0].ulps, 1);
  const testkit::Verdict exact_only = testkit::judge_insert(c, kvc::vllm_profile(), Status::Ok(), planted);
  EXPECT_EQ(exact_only.kind, VerdictKind::kMismatch) << exact_only.report;
}

// ---- one oracle run per judgment -------------------------------------------------------------------

// The oracle runs `judge` makes.
template <typename Judge>
std::int64_t oracle_runs(Judge&& judge) {
  const std::int64_t before = testkit::OracleBackend::runs_so_far();
  const testkit::Verdict v = judge();
  (void)v;
  return testkit::OracleBackend::runs_so_far() - before;
}

TEST(JudgeCost, TheOracleRunsOncePerJudgmentWhateverTheVerdict) {
  // The planted backends run the oracle themselves: their runs happen before the judgment.
  testkit::PlantedBackend mislabelled(kvc::sglang_store_profile(), kvc::vllm_profile());
  const InsertCase c = edge_insert_case();
  InsertOutputs sglang = testkit::make_outputs(c);
  ASSERT_TRUE(mislabelled.run(c, sglang).ok());
  std::vector<std::uint8_t> sglang_store = testkit::make_store_backing(edge_store_case());
  ASSERT_TRUE(mislabelled.run_store(edge_store_case(), sglang_store).ok());
  const Judged j = small(InsertOp::kLegacy, RecordFormat::kPacked528);
  const Broken b = broken("DuplicateSlot", InsertOp::kKvOnly, RecordFormat::kPacked584);
  const InsertCase norm = kv_norm_midpoint_case();
  kvc::Profile approximate = kvc::vllm_profile();
  approximate.rsqrt = RsqrtMode::kApproximate;

  EXPECT_EQ(oracle_runs([&] { return testkit::judge_insert(j.c, kvc::vllm_profile(), Status::Ok(), j.oracle); }), 1)
      << "match";
  EXPECT_EQ(oracle_runs([&] { return testkit::judge_insert(c, kvc::vllm_profile(), Status::Ok(), sglang); }), 1)
      << "mismatch, with the policy report and the classes";
  EXPECT_EQ(oracle_runs([&] { return testkit::judge_insert(c, kvc::sglang_store_profile(), Status::Ok(), sglang); }), 1)
      << "match under another profile";
  EXPECT_EQ(
      oracle_runs([&] { return testkit::judge_insert(norm, approximate, Status::Ok(), testkit::make_outputs(norm)); }),
      1)
      << "under a declared approximate rsqrt";
  EXPECT_EQ(oracle_runs([&] {
              return testkit::judge_insert(j.c, kvc::vllm_profile(), Error(ErrorCode::kDuplicateSlot), j.oracle);
            }),
            1)
      << "status differs";
  EXPECT_EQ(
      oracle_runs([&] { return testkit::judge_insert(b.c, kvc::vllm_profile(), Error(b.code), b.initial, b.initial); }),
      1)
      << "rejected alike";
  EXPECT_EQ(oracle_runs([&] {
              return testkit::judge_store(edge_store_case(), kvc::vllm_profile(), Status::Ok(), sglang_store);
            }),
            1)
      << "store mismatch";
}

}  // namespace
}  // namespace kvc
