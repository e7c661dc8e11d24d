// legacy_insert_test.cpp: the Q side of the legacy op, and its KV side against the KV-only op.
#include <gtest/gtest.h>

#include <cstring>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/rope.h"
#include "kvc/testkit/backend.h"
#include "kvc/testkit/backing.h"
#include "kvc/testkit/backing_diff.h"
#include "kvc/testkit/case_builder.h"
#include "kvc/testkit/small_cases.h"

namespace kvc {
namespace {

std::vector<float> cos_sin_row(const InsertCase& c, std::int64_t t) {
  std::vector<float> row(kRopeDim);
  const std::int64_t pos = c.positions.load<std::int64_t>(t);
  for (int j = 0; j < kRopeDim; ++j) row[j] = c.cos_sin.load<float>(pos * kRopeDim + j);
  return row;
}

// The Q row the contract prescribes, composed from the primitives: widen, [norm], [RoPE].
std::vector<float> expected_q_row(const InsertCase& c, std::int64_t t, std::int64_t h, bool rotate) {
  std::vector<float> e(kHeadDim);
  const std::int64_t heads = c.q.meta.size(1);
  for (int d = 0; d < kHeadDim; ++d) {
    const std::uint16_t bits = c.q.load<std::uint16_t>((t * heads + h) * kHeadDim + d);
    e[d] = c.q.meta.dtype == DType::kF16 ? oracle::fp16_to_float(bits) : oracle::bf16_to_float(bits);
  }
  if (c.apply_q_norm) oracle::q_norm_row(e.data(), c.eps);
  if (rotate) oracle::rope_gptj_row(e.data(), cos_sin_row(c, t).data());
  return e;
}

std::uint16_t q_out16(const InsertOutputs& out, std::int64_t element) {
  std::uint16_t v;
  std::memcpy(&v, out.q_out.data() + 2 * element, 2);
  return v;
}

InsertCase legacy_case(RecordFormat f, std::int64_t heads, std::int64_t hp, bool interleaved, bool norm, bool rope) {
  testkit::Rng rng(11);
  InsertCase kv = testkit::small_valid_case(InsertOp::kKvOnly, f, 5);
  testkit::QuerySpec q;
  q.heads = heads;
  q.padded_heads = hp;
  q.q = testkit::random_bf16_rows(rng, kv.num_rows() * heads);
  q.eps = 1e-6f;
  q.apply_q_norm = norm;
  q.apply_q_rope = rope;
  q.q_interleaved = interleaved;
  q.q_scale_inv = 3.0f;
  return testkit::make_legacy_case(kv, q);
}

TEST(LegacyQ, HeadMajorLiveHeadsAndZeroPadding) {
  for (bool norm : {false, true}) {
    for (bool rope : {false, true}) {
      SCOPED_TRACE(std::string("norm ") + (norm ? "on" : "off") + ", rope " + (rope ? "on" : "off"));
      const InsertCase c = legacy_case(RecordFormat::kPacked584, 3, 8, false, norm, rope);
      InsertOutputs out = testkit::make_outputs(c);
      ASSERT_TRUE(oracle::legacy_insert(c, out).ok());
      for (std::int64_t t = 0; t < c.num_rows(); ++t) {
        for (std::int64_t h = 0; h < 8; ++h) {
          const std::vector<float> e = h < 3 ? expected_q_row(c, t, h, rope) : std::vector<float>(kHeadDim, 0.0f);
          for (int d = 0; d < kHeadDim; ++d)
            ASSERT_EQ(q_out16(out, (t * 8 + h) * kHeadDim + d), h < 3 ? oracle::float_to_bf16(e[d]) : 0)
                << "t " << t << " h " << h << " d " << d;
        }
      }
      if (!norm && !rope) {
        EXPECT_EQ(q_out16(out, 5), c.q.load<std::uint16_t>(5)) << "no norm, no rope: input bits";
      }
    }
  }
}

TEST(LegacyQ, InterleavedIsAPermutationOfHeadMajor) {
  const InsertCase hm = legacy_case(RecordFormat::kPacked528, 5, 16, false, true, true);
  const InsertCase il = legacy_case(RecordFormat::kPacked528, 5, 16, true, true, true);
  InsertOutputs a = testkit::make_outputs(hm), b = testkit::make_outputs(il);
  ASSERT_TRUE(oracle::legacy_insert(hm, a).ok());
  ASSERT_TRUE(oracle::legacy_insert(il, b).ok());
  for (std::int64_t t = 0; t < hm.num_rows(); ++t)
    for (std::int64_t h = 0; h < 16; ++h)
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(q_out16(b, t * 16 * kHeadDim + (d / 16) * 16 * 16 + h * 16 + d % 16), q_out16(a, (t * 16 + h) * kHeadDim + d));
  EXPECT_EQ(a.cache, b.cache) << "the Q layout never touches the cache";
}

TEST(LegacyQ, FullCacheBf16InPlaceAndFp8WithReciprocalScale) {
  const InsertCase bf = legacy_case(RecordFormat::kBf16_512, 2, 0, false, true, true);
  InsertOutputs out = testkit::make_outputs(bf);
  ASSERT_TRUE(oracle::legacy_insert(bf, out).ok());
  for (std::int64_t t = 0; t < bf.num_rows(); ++t)
    for (std::int64_t h = 0; h < 2; ++h) {
      const auto e = expected_q_row(bf, t, h, true);
      for (int d = 0; d < kHeadDim; ++d) ASSERT_EQ(q_out16(out, (t * 2 + h) * kHeadDim + d), oracle::float_to_bf16(e[d]));
    }
  InsertCase f8 = legacy_case(RecordFormat::kFp8_512, 2, 0, false, false, true);
  out = testkit::make_outputs(f8);
  ASSERT_TRUE(oracle::legacy_insert(f8, out).ok());
  for (std::int64_t t = 0; t < f8.num_rows(); ++t)
    for (std::int64_t h = 0; h < 2; ++h) {
      const auto e = expected_q_row(f8, t, h, true);  // full-cache Q always rotates
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(out.q_out[static_cast<std::size_t>((t * 2 + h) * kHeadDim + d)], oracle::e4m3_encode(e[d] * 3.0f));
    }
}

TEST(LegacyQ, HeadPaddingZeroWritesNoQ) {
  const InsertCase c = legacy_case(RecordFormat::kPacked584, 4, 0, false, true, true);
  InsertOutputs out = testkit::make_outputs(c);
  EXPECT_TRUE(out.q_out.empty());
  ASSERT_TRUE(oracle::legacy_insert(c, out).ok());
}

// The DSpark claim beyond the upstream replay: for every format, head count, padding and Q flag,
// the legacy op's cache bytes equal the KV-only op's.
TEST(LegacyKvSide, EqualsKvOnlyForEveryHeadPaddingAndFlag) {
  for (RecordFormat f : kAllFormats) {
    const InsertCase kv_only = testkit::small_valid_case(InsertOp::kKvOnly, f, 5);
    InsertOutputs expected = testkit::make_outputs(kv_only);
    ASSERT_TRUE(testkit::OracleBackend().run(kv_only, expected).ok());
    for (std::int64_t hp : kSupportedHeadPadding) {
      if (!is_packed(f) && hp != 0) continue;
      for (bool interleaved : {false, true}) {
        for (bool norm : {false, true}) {
          const std::int64_t heads = hp == 0 ? 3 : hp;
          const InsertCase legacy = legacy_case(f, heads, hp, interleaved, norm, !norm);
          InsertOutputs actual = testkit::make_outputs(legacy);
          const Status s = testkit::OracleBackend().run(legacy, actual);
          ASSERT_TRUE(s.ok()) << s.ToString();
          const testkit::DiffReport r = testkit::diff_case_backings(kv_only, expected.cache, actual.cache);
          EXPECT_TRUE(r.equal()) << layout_of(f).name << " Hp " << hp << "\n"
                                 << testkit::format_case_report(kv_only, r, expected.cache, actual.cache, {});
        }
      }
    }
  }
}

TEST(LegacyFp16, PackedRopeRegionHoldsFp16) {
  InsertCase c = legacy_case(RecordFormat::kPacked584, 1, 8, false, false, false);
  // Reinterpret the same bits as f16 (values stay finite and moderate: |bf16 normal| < 8).
  c.kv.meta.dtype = DType::kF16;
  c.q.meta.dtype = DType::kF16;
  c.q_out.dtype = DType::kF16;
  for (std::int64_t i = 0; i < c.kv.meta.numel(); ++i) c.kv.store<std::uint16_t>(i, oracle::float_to_fp16(0.25f * static_cast<float>(i % 13) - 1.5f));
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = oracle::legacy_insert(c, out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const oracle::PagedCacheView view = testkit::view_of(c);
  EXPECT_EQ(view.value_dtype, DType::kF16);
  const std::int64_t t = 0, slot = c.slots.load<std::int64_t>(t);
  std::vector<float> x(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) x[d] = oracle::fp16_to_float(c.kv.load<std::uint16_t>(d));
  oracle::rope_gptj_row(x.data(), cos_sin_row(c, t).data());
  const oracle::DecodedRecord r = oracle::decode_record(out.cache, view, slot);
  for (int d = kNopeDim; d < kHeadDim; ++d) ASSERT_EQ(r.values16[d], oracle::float_to_fp16(x[d])) << "dim " << d;
  for (int d = 0; d < kNopeDim; ++d) ASSERT_EQ(r.dequantized[d], x[d]) << "quarter steps are exact in e4m3 here, dim " << d;
}

}  // namespace
}  // namespace kvc
