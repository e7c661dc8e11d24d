// approx_rsqrt_test.cpp: the declared "approximate rsqrt" comparison (docs/contract.md §2, §6) on
// planted differences: a row made with r + 1 ulp passes and is reported with its offset, a row
// with one output byte changed fails, a row made with r + 3 ulp fails, a byte outside the norm
// rows fails, and exact stays the default. For Q-norm heads of the legacy op, kv_norm records of
// the fused KV-only insert, and rows of the standalone kv_norm.
//
// The rows are crafted so that moving r by a few ulps changes their bytes (most rows of random
// data do not: bf16 output steps are 2^16 fp32 ulps apart). Row A: dim 0 = 4096, dim 1 = 1, the
// rest 0. Lane 0 absorbs the 1 (2^24 + 1 is a tie, rounds to 2^24), so S = 2^24, and with
// eps = 931.5, fma(S, 1/512, eps) = 33699.5 and r = 0x3bb28000, exactly a bf16 midpoint: bf(r) =
// 0x3bb2 (ties to even), bf(r + 1 ulp) = 0x3bb3. Dims 0 and 1 store bf(4096 r) and bf(r), so r + 1
// ulp changes them. Row A made with r + 3 ulp equals row A with r + 1 ulp (both 0x3bb3), which is
// why row B exists: row A plus four ones in lane 1 (dims 16..19), S = 2^24 + 4, r = 0x3bb27ffe,
// whose bf(r') is 0x3bb2 for r' in [r - 2, r + 2] ulp and 0x3bb3 only from r + 3 ulp: a row made
// with r + 3 ulp is reproduced by no allowed r'. The norm rows are re-encoded under the profile
// they are judged under (ApproxRsqrtProfile).
#include <gtest/gtest.h>

#include <cstring>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/profile.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

using testkit::NormRow;
using testkit::NormRowKind;

constexpr float kEps = 931.5f;

std::vector<std::uint16_t> row_a() {
  std::vector<std::uint16_t> row(kHeadDim, 0x0000);
  row[0] = 0x4580;  // 4096
  row[1] = 0x3F80;  // 1
  return row;
}

std::vector<std::uint16_t> row_b() {
  std::vector<std::uint16_t> row = row_a();
  for (int d = 16; d < 20; ++d) row[static_cast<std::size_t>(d)] = 0x3F80;
  return row;
}

TEST(ApproxRsqrtRows, CraftedRowsHaveTheAdvertisedR) {
  std::vector<float> a(kHeadDim), b(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) {
    a[static_cast<std::size_t>(d)] = oracle::bf16_to_float(row_a()[static_cast<std::size_t>(d)]);
    b[static_cast<std::size_t>(d)] = oracle::bf16_to_float(row_b()[static_cast<std::size_t>(d)]);
  }
  const float ra = oracle::row_rms_inverse(a.data(), kEps), rb = oracle::row_rms_inverse(b.data(), kEps);
  EXPECT_EQ(oracle::bits_of(ra), 0x3bb28000u);
  EXPECT_EQ(oracle::bits_of(rb), 0x3bb27ffeu);
  EXPECT_EQ(oracle::float_to_bf16(ra), 0x3bb2);
  EXPECT_EQ(oracle::float_to_bf16(testkit::offset_by_ulps(ra, 1)), 0x3bb3);
  for (int k = -2; k <= 2; ++k)
    EXPECT_EQ(oracle::float_to_bf16(testkit::offset_by_ulps(rb, k)), 0x3bb2) << "row B, r " << k << " ulp";
  EXPECT_EQ(oracle::float_to_bf16(testkit::offset_by_ulps(rb, 3)), 0x3bb3);
}

// A backend that declares the hardware rsqrt for every norm: only its declaration matters here.
class ApproximateRsqrtBackend final : public testkit::Backend {
 public:
  std::string name() const override { return "declares approximate rsqrt"; }
  Status run(const InsertCase& c, InsertOutputs& out) override { return oracle_.run(c, out); }
  RsqrtMode rsqrt_mode(InsertOp, bool) const override { return RsqrtMode::kApproximate; }

 private:
  testkit::OracleBackend oracle_;
};

// Legacy packed584, 2 live heads of 8 (head 0 = row A, head 1 = row B), Q-norm on, RoPE off.
InsertCase q_norm_case() {
  const InsertCase kv = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584, 3);
  testkit::QuerySpec q;
  q.heads = 2;
  q.padded_heads = 8;
  for (std::int64_t t = 0; t < kv.num_rows(); ++t) {
    for (const auto& row : {row_a(), row_b()}) q.q.insert(q.q.end(), row.begin(), row.end());
  }
  q.eps = kEps;
  q.apply_q_norm = true;
  q.apply_q_rope = false;
  return testkit::make_legacy_case(kv, q);
}

// KV-only bf16_512 with kv_norm fused (weight 1): live rows alternate row A and row B.
InsertCase kv_norm_case() {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512, 3);
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    const auto row = t % 2 ? row_b() : row_a();
    for (int d = 0; d < kHeadDim; ++d) c.kv.store<std::uint16_t>(t * kHeadDim + d, row[static_cast<std::size_t>(d)]);
  }
  c.kv_norm_weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  c.kv_norm_eps = kEps;
  return c;
}

InsertOutputs oracle_outputs(const InsertCase& c) {
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = testkit::OracleBackend().run(c, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// The first norm row whose token row is A (even kv row / head 0), and one whose row is B.
NormRow pick(const InsertCase& c, bool b) {
  for (const NormRow& r : testkit::norm_rows(c)) {
    const bool is_b = r.kind == NormRowKind::kQHead ? r.head == 1 : r.token % 2 == 1;
    if (is_b == b) return r;
  }
  ADD_FAILURE() << "no norm row of the wanted kind";
  return {};
}

class ApproxRsqrtInsert : public ::testing::TestWithParam<bool> {  // true: Q-norm heads, false: kv_norm records
 protected:
  InsertCase c = GetParam() ? q_norm_case() : kv_norm_case();
  InsertOutputs expected = oracle_outputs(c);

  // The oracle's outputs with norm row `row` (named `row_name`) rewritten as if made with
  // r + `ulps` ulp, compared under the approximate mode.
  testkit::ApproxRsqrtResult compare_with_row_moved(const NormRow& row, const char* row_name, int ulps) {
    InsertOutputs planted = expected;
    testkit::rewrite_norm_row(c, row, ulps, planted);
    EXPECT_FALSE(planted.cache == expected.cache && planted.q_out == expected.q_out)
        << "r + " << ulps << " ulp must change row " << row_name << "'s bytes";
    return testkit::compare_under_rsqrt_mode(c, RsqrtMode::kApproximate, expected, planted);
  }
};

TEST_P(ApproxRsqrtInsert, ExactIsTheDefault) {
  testkit::OracleBackend oracle;
  ApproximateRsqrtBackend approximate;
  EXPECT_EQ(testkit::declared_rsqrt_mode(oracle, c), RsqrtMode::kCorrectlyRounded);
  EXPECT_EQ(testkit::declared_rsqrt_mode(approximate, c), RsqrtMode::kApproximate);
  EXPECT_TRUE(testkit::compare_under_rsqrt_mode(c, RsqrtMode::kCorrectlyRounded, expected, expected).accepted);
  InsertOutputs planted = expected;
  testkit::rewrite_norm_row(c, pick(c, false), 1, planted);
  const testkit::ApproxRsqrtResult r =
      testkit::compare_under_rsqrt_mode(c, testkit::declared_rsqrt_mode(oracle, c), expected, planted);
  EXPECT_FALSE(r.accepted) << "a backend that declares nothing is checked byte for byte\n" << r.report;
}

TEST_P(ApproxRsqrtInsert, RowMadeWithROnePlusUlpPassesAndIsReported) {
  const NormRow a = pick(c, false);
  const testkit::ApproxRsqrtResult r = compare_with_row_moved(a, "A", 1);
  EXPECT_TRUE(r.accepted) << r.report;
  ASSERT_EQ(r.moved.size(), 1u) << r.report;
  EXPECT_EQ(r.moved[0].row.token, a.token);
  EXPECT_EQ(r.moved[0].row.head, a.head);
  EXPECT_EQ(r.moved[0].ulps, 1);
  EXPECT_TRUE(r.rejected.empty());
  EXPECT_NE(r.report.find("approximate"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find(testkit::describe(a) + ": r' = r + 1 ulp"), std::string::npos) << r.report;
  std::printf("%s", r.report.c_str());
}

TEST_P(ApproxRsqrtInsert, RowWithOneChangedByteFails) {
  InsertOutputs planted = expected;
  const NormRow a = pick(c, false);
  testkit::rewrite_norm_row(c, a, 1, planted);
  // dim 5 of row A: 0 for every r', so 0x0001 is no rounding of any r'.
  if (a.kind == NormRowKind::kQHead) {
    planted.q_out[static_cast<std::size_t>(oracle::q_out_byte_offset(c, a.token, a.head, 5))] ^= 0x01;
  } else {
    planted.cache[static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), a.slot) + 2 * 5)] ^= 0x01;
  }
  const testkit::ApproxRsqrtResult r = testkit::compare_under_rsqrt_mode(c, RsqrtMode::kApproximate, expected, planted);
  EXPECT_FALSE(r.accepted);
  ASSERT_EQ(r.rejected.size(), 1u) << r.report;
  EXPECT_EQ(r.rejected[0].token, a.token);
  EXPECT_NE(r.report.find("REJECTED " + testkit::describe(a)), std::string::npos) << r.report;
  std::printf("%s", r.report.c_str());
}

TEST_P(ApproxRsqrtInsert, RowMadeWithRPlusThreeUlpFails) {
  const NormRow b = pick(c, true);
  const testkit::ApproxRsqrtResult r = compare_with_row_moved(b, "B", 3);
  EXPECT_FALSE(r.accepted) << r.report;
  ASSERT_EQ(r.rejected.size(), 1u) << r.report;
  EXPECT_EQ(r.rejected[0].token, b.token);
}

TEST_P(ApproxRsqrtInsert, ByteOutsideTheNormRowsFails) {
  InsertOutputs planted = expected;
  if (GetParam()) {
    planted.q_out[static_cast<std::size_t>(oracle::q_out_byte_offset(c, 0, 5, 0))] ^= 0x01;  // padding head 5
  } else {
    planted.cache.back() ^= 0x01;  // guard zone
  }
  const testkit::ApproxRsqrtResult r = testkit::compare_under_rsqrt_mode(c, RsqrtMode::kApproximate, expected, planted);
  EXPECT_FALSE(r.accepted) << r.report;
  EXPECT_FALSE(r.other_bytes_equal);
  EXPECT_TRUE(r.rejected.empty()) << "no norm row differs";
}

INSTANTIATE_TEST_SUITE_P(Rows, ApproxRsqrtInsert, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "QNormHeads" : "KvNormRecords";
                         });

TEST(ApproxRsqrtStandaloneKvNorm, PlantedRows) {
  std::vector<std::uint16_t> rows = row_a();
  const auto b = row_b();
  rows.insert(rows.end(), b.begin(), b.end());
  const HostTensor kv = make_tensor_from(DType::kBF16, rows, {2, kHeadDim});
  const HostTensor w = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  std::vector<std::uint16_t> expected;
  ASSERT_TRUE(oracle::kv_norm(kv, w, kEps, &expected).ok());

  std::vector<std::uint16_t> plus_one = expected;
  testkit::rewrite_kv_norm_row(kv, w, kEps, 0, 1, plus_one);
  ASSERT_NE(plus_one, expected);
  testkit::ApproxRsqrtResult r =
      testkit::compare_kv_norm_under_rsqrt_mode(kv, w, kEps, RsqrtMode::kApproximate, expected, plus_one);
  EXPECT_TRUE(r.accepted) << r.report;
  ASSERT_EQ(r.moved.size(), 1u);
  EXPECT_EQ(r.moved[0].ulps, 1);
  EXPECT_NE(r.report.find("row 0: r' = r + 1 ulp"), std::string::npos) << r.report;
  EXPECT_FALSE(
      testkit::compare_kv_norm_under_rsqrt_mode(kv, w, kEps, RsqrtMode::kCorrectlyRounded, expected, plus_one).accepted)
      << "exact is the default";

  std::vector<std::uint16_t> changed = plus_one;
  changed[5] ^= 0x0001;
  r = testkit::compare_kv_norm_under_rsqrt_mode(kv, w, kEps, RsqrtMode::kApproximate, expected, changed);
  EXPECT_FALSE(r.accepted) << r.report;
  ASSERT_EQ(r.rejected.size(), 1u);

  std::vector<std::uint16_t> plus_three = expected;
  testkit::rewrite_kv_norm_row(kv, w, kEps, 1, 3, plus_three);
  ASSERT_NE(plus_three, expected);
  r = testkit::compare_kv_norm_under_rsqrt_mode(kv, w, kEps, RsqrtMode::kApproximate, expected, plus_three);
  EXPECT_FALSE(r.accepted) << r.report;
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].token, 1);
}

// A kv_norm record is re-encoded under the profile it is judged under: rewritten at r itself it
// keeps the oracle's bytes under that profile (SGLang's: no RoPE, pad byte not written), which the
// contract's encoding would not. Catches a comparison that re-encodes the rows it moves under the
// contract whatever the library declares (every moved row of an `sglang-store` library rejected).
TEST(ApproxRsqrtProfile, ANormRowIsReencodedUnderTheJudgedProfile) {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584, 3);
  c.kv_norm_weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  oracle::OracleOptions sglang;
  sglang.profile = kvc::sglang_store_profile();
  InsertOutputs expected = testkit::make_outputs(c);
  ASSERT_TRUE(testkit::OracleBackend(sglang).run(c, expected).ok());
  const NormRow row = testkit::norm_rows(c).front();
  InsertOutputs rewritten = expected;
  testkit::rewrite_norm_row(c, row, 0, rewritten, sglang.profile);
  EXPECT_EQ(rewritten.cache, expected.cache);
  InsertOutputs under_the_contract = expected;
  testkit::rewrite_norm_row(c, row, 0, under_the_contract);
  EXPECT_NE(under_the_contract.cache, expected.cache) << "the two profiles must differ on this record";
  EXPECT_TRUE(
      testkit::compare_under_rsqrt_mode(c, RsqrtMode::kApproximate, expected, expected, sglang.profile).accepted);
}

}  // namespace
}  // namespace kvc
