// validate_test.cpp: the invalid-input matrix. Every rule of docs/contract.md §5, broken alone, for
// every op and format it applies to: the op rejects with the rule's code and writes nothing (the
// backing and the q output are byte-identical afterwards). There is a negative test per validation
// site, not only per error code: the rule breakers cover the sites an op reaches through
// Backend::run (one breaker per site, testkit/rule_breakers.h), the tests at the end the entry
// points' wrong-op sites and the standalone kv_norm's rules.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <set>

#include "rejected_at_its_level.h"
#include "testkit/backends/oracle_backend.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/legacy_insert.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/test_name.h"
#include "testkit/cases/uncovered_codes.h"

namespace kvc {
namespace {

using MatrixEntry = testkit::RuleMatrixEntry;

class InvalidInput : public ::testing::TestWithParam<MatrixEntry> {};

TEST_P(InvalidInput, RejectedWithItsCodeAndNothingWritten) {
  const MatrixEntry& e = GetParam();
  InsertCase c = testkit::small_valid_case(e.op, e.format);
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(testkit::OracleBackend().run(c, out).ok()) << "the base case must be valid";
  out = testkit::make_outputs(c);
  ASSERT_TRUE(e.breaker->apply(c, out)) << "the base case must offer the breaker something to break";
  expect_rejected_at_its_level(
      e.breaker->code, e.breaker->level, out,
      [&](ValidationLevel level, InsertOutputs& o) {
        oracle::OracleOptions options;
        options.level = level;
        return testkit::OracleBackend(options).run(c, o);
      },
      [](const InsertOutputs& before, const InsertOutputs& o) {
        return o.cache != before.cache ? "the backing" : o.q_out != before.q_out ? "q_out" : "";
      });
}

INSTANTIATE_TEST_SUITE_P(Rules, InvalidInput, ::testing::ValuesIn(testkit::rule_matrix()),
                         testkit::ParamNamedBy<testkit::rule_matrix_name>());

TEST(InvalidInputMatrix, EveryErrorCodeHasABreaker) {
  std::set<ErrorCode> covered;
  for (const testkit::RuleBreaker& b : testkit::rule_breakers()) covered.insert(b.code);
  // The store and stacked ops' own rules are broken in their suites (uncovered_codes.h).
  for (ErrorCode code : testkit::codes_without_a_negative_test(covered))
    ADD_FAILURE() << "no negative test for E" << static_cast<int>(code) << " " << error_name(code);
}

TEST(ErrorCodes, NamesNumbersAndMessagesAreStable) {
  // The numbers are written into case files and reports; changing one is a breaking change.
  EXPECT_EQ(static_cast<int>(ErrorCode::kFp8ScaleMissing), 116);
  EXPECT_EQ(static_cast<int>(ErrorCode::kDuplicateSlot), 204);
  std::set<int> numbers;
  for (ErrorCode code : kAllErrorCodes) {
    EXPECT_TRUE(numbers.insert(static_cast<int>(code)).second) << "number reused: " << static_cast<int>(code);
    EXPECT_FALSE(error_message(code).empty());
    ErrorCode back{};
    EXPECT_TRUE(error_code_from_number(static_cast<int>(code), &back));
    EXPECT_EQ(back, code);
  }
  const Status duplicate{ErrorCode::kDuplicateSlot, "slot 5"};
  EXPECT_EQ(duplicate.ToString(), "E204 kDuplicateSlot: two tokens map to the same slot (slot 5)");
}

TEST(ScaleShape, ZeroDimensionalScaleIsOneElement) {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kFp8_512);
  c.fp8_scale.meta.sizes.clear();
  c.fp8_scale.meta.strides.clear();
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = testkit::OracleBackend().run(c, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// Sites of contract/src/validate.cpp that the rule-breaker matrix cannot reach: each entry point
// rejecting a case of the other op, and each rule of the standalone kv_norm's validation.
TEST(ValidationSites, EachOpRejectsACaseOfTheOtherOp) {
  const InsertCase legacy = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
  const InsertCase kv_only = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  InsertOutputs out = testkit::make_outputs(legacy);
  const InsertOutputs before = out;
  EXPECT_EQ(oracle::kv_only_insert(legacy, out).code, ErrorCode::kWrongOp);
  EXPECT_EQ(out.cache, before.cache);
  out = testkit::make_outputs(kv_only);
  EXPECT_EQ(oracle::legacy_insert(kv_only, out).code, ErrorCode::kWrongOp);
  EXPECT_EQ(validate_kv_only_insert(legacy, ValidationLevel::kStrict).code, ErrorCode::kWrongOp);
  EXPECT_EQ(validate_legacy_insert(kv_only, ValidationLevel::kContract).code, ErrorCode::kWrongOp);
}

struct KvNormSite {
  const char* name;
  ErrorCode code;
  std::function<void(HostTensor& kv, HostTensor& weight)> apply;
};

class StandaloneKvNormSite : public ::testing::TestWithParam<KvNormSite> {};

TEST_P(StandaloneKvNormSite, RejectedWithItsCode) {
  testkit::Rng rng(8);
  HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 3), {3, kHeadDim});
  HostTensor weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  std::vector<std::uint16_t> out;
  ASSERT_TRUE(oracle::kv_norm(kv, weight, 1e-6f, &out).ok()) << "the base case must be valid";
  GetParam().apply(kv, weight);
  const Status s = oracle::kv_norm(kv, weight, 1e-6f, &out);
  EXPECT_EQ(s.code, GetParam().code) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(Sites, StandaloneKvNormSite,
                         ::testing::Values(KvNormSite{"KvMissing", ErrorCode::kKvDtype,
                                                      [](HostTensor& kv, HostTensor&) { kv = HostTensor{}; }},
                                           KvNormSite{"KvFloat16", ErrorCode::kKvDtype,
                                                      [](HostTensor& kv, HostTensor&) { kv.meta.dtype = DType::kF16; }},
                                           KvNormSite{"KvRowsOf256", ErrorCode::kKvShape,
                                                      [](HostTensor& kv, HostTensor&) {
                                                        kv.meta.sizes = {6, 256};
                                                        kv.meta.strides = {256, 1};
                                                      }},
                                           KvNormSite{"KvNotContiguous", ErrorCode::kKvNotContiguous,
                                                      [](HostTensor& kv, HostTensor&) {
                                                        kv.meta.strides[0] *= 2;
                                                        kv.bytes.resize(static_cast<std::size_t>(kv.meta.span_bytes()));
                                                      }},
                                           KvNormSite{"KvBytesTruncated", ErrorCode::kInputTooSmall,
                                                      [](HostTensor& kv, HostTensor&) { kv.bytes.pop_back(); }},
                                           KvNormSite{"WeightMissing", ErrorCode::kNormWeightInvalid,
                                                      [](HostTensor&, HostTensor& w) { w = HostTensor{}; }},
                                           KvNormSite{"WeightBytesTruncated", ErrorCode::kNormWeightInvalid,
                                                      [](HostTensor&, HostTensor& w) { w.bytes.pop_back(); }},
                                           KvNormSite{"WeightOnAnotherDevice", ErrorCode::kDeviceMismatch,
                                                      [](HostTensor&, HostTensor& w) { w.meta.device = 1; }}),
                         [](const ::testing::TestParamInfo<KvNormSite>& p) { return std::string(p.param.name); });

TEST(KvOnlyRows, RowsBeyondTheSlotsAreNeverRead) {
  // Rows >= slots.size(0) may hold anything, even positions far out of range: never read.
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  InsertOutputs a = testkit::make_outputs(c), b = testkit::make_outputs(c);
  ASSERT_TRUE(testkit::OracleBackend().run(c, a).ok());
  for (std::int64_t t = c.num_inserted(); t < c.num_rows(); ++t) {
    c.positions.store<std::int64_t>(t, 1 << 30);
    for (int d = 0; d < kHeadDim; ++d) c.kv.store<std::uint16_t>(t * kHeadDim + d, 0x7FC0);
  }
  ASSERT_TRUE(testkit::OracleBackend().run(c, b).ok());
  EXPECT_EQ(a.cache, b.cache);
}

}  // namespace
}  // namespace kvc
