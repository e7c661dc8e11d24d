// kv_norm_test.cpp: standalone kv_norm, and kv_norm fused in front of the KV-only insert equals
// normalizing first and inserting the result.
#include <gtest/gtest.h>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/rms_norm.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

HostTensor weight_tensor(testkit::Rng& rng) {
  std::vector<std::uint16_t> w(kHeadDim);
  for (auto& x : w) x = oracle::float_to_bf16(1.0f + 0.25f * rng.normal());
  return make_tensor_from(DType::kBF16, w, {kHeadDim});
}

TEST(KvNorm, StandaloneMatchesRowFunction) {
  testkit::Rng rng(4);
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 3), {3, kHeadDim});
  const HostTensor w = weight_tensor(rng);
  std::vector<std::uint16_t> out;
  ASSERT_TRUE(oracle::kv_norm(kv, w, 1e-6f, &out).ok());
  for (std::int64_t t = 0; t < 3; ++t) {
    std::vector<float> e(kHeadDim);
    std::vector<std::uint16_t> wb(kHeadDim);
    for (int d = 0; d < kHeadDim; ++d) {
      e[d] = oracle::bf16_to_float(kv.load<std::uint16_t>(t * kHeadDim + d));
      wb[d] = w.load<std::uint16_t>(d);
    }
    const float r = oracle::rms_inverse(oracle::lane_ordered_sum_of_squares(e.data()), 1e-6f);
    for (int d = 0; d < kHeadDim; ++d)
      ASSERT_EQ(out[t * kHeadDim + d], oracle::float_to_bf16((e[d] * r) * oracle::bf16_to_float(wb[d])));
  }
}

TEST(KvNorm, RejectsBadWeight) {
  testkit::Rng rng(4);
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 1), {1, kHeadDim});
  std::vector<std::uint16_t> out;
  EXPECT_EQ(oracle::kv_norm(kv, make_tensor(DType::kBF16, {256}), 1e-6f, &out).code, ErrorCode::kNormWeightInvalid);
  EXPECT_EQ(oracle::kv_norm(kv, make_tensor(DType::kF32, {kHeadDim}), 1e-6f, &out).code, ErrorCode::kNormWeightInvalid);
}

TEST(KvNorm, FusedEqualsNormThenInsertInEveryFormat) {
  for (RecordFormat f : kAllFormats) {
    testkit::Rng rng(9);
    InsertCase fused = testkit::small_valid_case(InsertOp::kKvOnly, f, 2);
    fused.kv_norm_weight = weight_tensor(rng);
    fused.kv_norm_eps = 1e-5f;
    InsertCase two_step = fused;
    two_step.kv_norm_weight = HostTensor{};
    std::vector<std::uint16_t> normed;
    ASSERT_TRUE(oracle::kv_norm(fused.kv, fused.kv_norm_weight, 1e-5f, &normed).ok());
    two_step.kv = make_tensor_from(DType::kBF16, normed, {fused.num_rows(), kHeadDim});
    InsertOutputs a = testkit::make_outputs(fused), b = testkit::make_outputs(two_step);
    ASSERT_TRUE(testkit::OracleBackend().run(fused, a).ok());
    ASSERT_TRUE(testkit::OracleBackend().run(two_step, b).ok());
    const testkit::DiffReport r = testkit::diff_case_backings(fused, b.cache, a.cache);
    EXPECT_TRUE(r.equal()) << testkit::format_case_report(fused, r, b.cache, a.cache, {});
  }
}

}  // namespace
}  // namespace kvc
