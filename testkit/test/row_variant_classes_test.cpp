// row_variant_classes_test.cpp: the classifier names each numeric alternative it tries, and claims
// nothing else.
//
// For each alternative of testkit/compare/row_variants.h that a kernel defect produces and that
// the classifier used to call "unexplained" (RoPE pairs as NeoX halves inside a lane, e4m3
// without saturation, fp8_scale multiplied or divided, bf16 NaN payloads kept), a small case with
// the inputs that expose it is run on the oracle, and the alternative is planted into the
// oracle's bytes by code written here from the contract's text (not by row_variants.cpp):
//   Named: planted on every live row, every differing record gets the alternative's class and
//     its description ("reproduced by: ...").
//   NotClaimed: planted on every other live row, with one bit flipped in a record of another
//     row: the rows left correct make no site, the planted rows are the alternative's, and the
//     flipped record stays unexplained.
// Catches: a classifier that does not try an alternative (the sites are unexplained), that tries
// it under the wrong class or description, an alternative whose encoding is wrong (it does not
// reproduce the planted bytes), and one so loose that it claims a record it does not produce.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/test_name.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/compare/row_variants.h"

namespace kvc::testkit {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::int64_t kRows = 12, kBlocks = 2, kBlockSize = 16, kMaxPos = 32;
constexpr float kScale = 0.7f;
// x / 0.96f and x * fl(1 / 0.96f) fall on either side of an e4m3 midpoint for x = 1.5 * 2^k
// (1.5 / 0.96f is the tie 1.5625 exactly; the product is one ulp above it).
constexpr float kDivisionScale = 0.96f;
constexpr std::uint16_t kBf16NegNanPayload = 0xFFC1, kBf16SignallingNan = 0x7F81, kBf16QuietNan = 0x7FC0;
constexpr std::uint16_t kBf16PosInf = 0x7F80, kBf16NegInf = 0xFF80;

void put16(Bytes& b, std::int64_t off, std::uint16_t v) {
  b[static_cast<std::size_t>(off)] = static_cast<std::uint8_t>(v & 0xFF);
  b[static_cast<std::size_t>(off) + 1] = static_cast<std::uint8_t>(v >> 8);
}

std::uint16_t bf16(float x) { return oracle::float_to_bf16(x); }

// e4m3 without saturation by search: NaN -> 0x7F; beyond 448 + half an ulp (464) NaN with the
// sign; else the nearest of the finite codes, ties to the even code.
std::uint8_t e4m3_nosat_by_search(float v) {
  if (std::isnan(v)) return 0x7F;
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const float a = std::fabs(v);
  if (a > 464.0f) return sign | 0x7F;
  int best = 0;
  for (int code = 1; code <= 0x7E; ++code) {
    const float d = std::fabs(oracle::e4m3_decode(static_cast<std::uint8_t>(code)) - a),
                best_d = std::fabs(oracle::e4m3_decode(static_cast<std::uint8_t>(best)) - a);
    if (d < best_d || (d == best_d && code % 2 == 0)) best = code;
  }
  return static_cast<std::uint8_t>(sign | best);
}

struct VariantCell {
  RowVariant variant;
  RecordFormat format;
  float fp8_scale;
  // Edge values the variant needs, written into every row.
  std::function<void(std::vector<std::uint16_t>& kv)> inputs;
  // The variant's record of live row t (slot `slot`) written over the oracle's in `backing`.
  std::function<void(const InsertCase& c, const oracle::PagedCacheView& v, std::int64_t t, std::int64_t slot,
                     Bytes& backing)>
      plant;
};

void each_row(std::vector<std::uint16_t>& kv, const std::function<void(std::uint16_t* row)>& f) {
  for (std::size_t r = 0; r < kv.size() / kHeadDim; ++r) f(kv.data() + r * kHeadDim);
}

void plant_rope_neox_in_lane(const InsertCase& c, const oracle::PagedCacheView& v, std::int64_t t, std::int64_t slot,
                             Bytes& b) {
  float x[kHeadDim];
  oracle::kv_row_before_rope(c, t, x);
  const std::int64_t pos = c.positions.load<std::int64_t>(t);
  for (int lane = 0; lane < 4; ++lane)
    for (int k = 0; k < 8; ++k) {
      const int j = 8 * lane + k, i0 = kNopeDim + 16 * lane + k, i1 = i0 + 8;
      const float cs = c.cos_sin.load<float>(pos * kRopeDim + j), sn = c.cos_sin.load<float>(pos * kRopeDim + 32 + j);
      const float a = x[i0], bb = x[i1];
      x[i0] = std::fma(a, cs, -(bb * sn));
      x[i1] = std::fma(a, sn, bb * cs);
    }
  for (int d = kNopeDim; d < kHeadDim; ++d)
    put16(b, oracle::token_data_offset(v, slot) + oracle::dim_offset_in_data(v.format, d), bf16(x[d]));
}

void plant_nosat(const InsertCase& c, const oracle::PagedCacheView& v, std::int64_t t, std::int64_t slot, Bytes& b) {
  const std::int64_t data = oracle::token_data_offset(v, slot);
  if (v.format == RecordFormat::kFp8_512) {
    float x[kHeadDim];
    oracle::kv_row_after_rope(c, t, x);
    const float inv = 1.0f / c.fp8_scale.load<float>(0);
    for (int d = 0; d < kHeadDim; ++d) b[static_cast<std::size_t>(data + d)] = e4m3_nosat_by_search(x[d] * inv);
    return;
  }
  // Packed: a block's scaled values never pass 448; only a NaN or an Inf (Inf * 0 in an Inf
  // block) reaches the conversion as NaN, which it keeps: 0x7F instead of the clamp's 0xFE.
  std::uint16_t row16[kHeadDim];
  oracle::rotated_row16(c, t, kvc::vllm_profile(), row16);
  for (int d = 0; d < layout_of(v.format).fp8_dims; ++d) {
    const float y = oracle::widen16(row16[d], c.kv.meta.dtype);
    if (std::isnan(y) || std::isinf(y))
      b[static_cast<std::size_t>(data + oracle::dim_offset_in_data(v.format, d))] = 0x7F;
  }
}

void plant_scaled(const InsertCase& c, const oracle::PagedCacheView& v, std::int64_t t, std::int64_t slot, Bytes& b,
                  bool divide) {
  float x[kHeadDim];
  oracle::kv_row_after_rope(c, t, x);
  const float s = c.fp8_scale.load<float>(0);
  for (int d = 0; d < kHeadDim; ++d)
    b[static_cast<std::size_t>(oracle::token_data_offset(v, slot) + d)] =
        oracle::e4m3_encode(divide ? x[d] / s : x[d] * s);
}

void plant_nan_payload(const InsertCase& c, const oracle::PagedCacheView& v, std::int64_t t, std::int64_t slot,
                       Bytes& b) {
  for (int d = 0; d < kNopeDim; ++d) {
    const std::uint16_t in = c.kv.load<std::uint16_t>(t * kHeadDim + d);
    if ((in & 0x7FFF) > 0x7F80) put16(b, oracle::token_data_offset(v, slot) + 2 * d, in);
  }
}

std::vector<VariantCell> cells() {
  auto nan_and_inf = [](std::vector<std::uint16_t>& kv) {
    each_row(kv, [](std::uint16_t* r) {
      r[9] = kBf16QuietNan;
      r[100] = kBf16PosInf;
      r[300] = kBf16NegInf;
    });
  };
  auto past_fp8_range = [](std::vector<std::uint16_t>& kv) {
    each_row(kv, [](std::uint16_t* r) {
      r[5] = bf16(330.0f);  // / 0.7 = 471: past 464
      r[6] = bf16(-1e4f);
      r[7] = kBf16PosInf;
      r[8] = kBf16NegNanPayload;
      r[9] = bf16(320.0f);  // / 0.7 = 457: rounds to 448 either way
    });
  };
  auto halves = [](std::vector<std::uint16_t>& kv) {
    each_row(kv, [](std::uint16_t* r) {
      for (int d = 0; d < kNopeDim; d += 3) r[d] = bf16((d % 2 ? -1.5f : 1.5f) * std::ldexp(1.0f, d % 5 - 2));
    });
  };
  auto nans = [](std::vector<std::uint16_t>& kv) {
    each_row(kv, [](std::uint16_t* r) {
      r[3] = kBf16NegNanPayload;
      r[77] = kBf16SignallingNan;
      r[300] = kBf16QuietNan;
    });
  };
  auto none = [](std::vector<std::uint16_t>&) {};
  auto scaled = [](bool divide) {
    return [divide](const InsertCase& c, const oracle::PagedCacheView& v, std::int64_t t, std::int64_t slot, Bytes& b) {
      plant_scaled(c, v, t, slot, b, divide);
    };
  };
  return {
      {RowVariant::kRopeNeoxInLane, RecordFormat::kPacked584, kScale, none, plant_rope_neox_in_lane},
      {RowVariant::kRopeNeoxInLane, RecordFormat::kBf16_512, kScale, none, plant_rope_neox_in_lane},
      {RowVariant::kE4m3NoSaturation, RecordFormat::kPacked584, kScale, nan_and_inf, plant_nosat},
      {RowVariant::kE4m3NoSaturation, RecordFormat::kPacked528, kScale, nan_and_inf, plant_nosat},
      {RowVariant::kE4m3NoSaturation, RecordFormat::kFp8_512, kScale, past_fp8_range, plant_nosat},
      {RowVariant::kFp8ScaleMultiplied, RecordFormat::kFp8_512, kScale, none, scaled(false)},
      {RowVariant::kFp8ScaleDivided, RecordFormat::kFp8_512, kDivisionScale, halves, scaled(true)},
      {RowVariant::kBf16NanPayloadKept, RecordFormat::kBf16_512, kScale, nans, plant_nan_payload},
  };
}

std::string cell_name(const VariantCell& v) {
  static const char* const kNames[] = {"Contract",        "E4m3TiesAway",      "Bf16TiesAway",     "RopeMulSub",
                                       "RopeNeox",        "RopeNeoxInLane",    "E4m3NoSaturation", "Fp8ScaleMultiplied",
                                       "Fp8ScaleDivided", "Bf16NanPayloadKept"};
  return std::string(kNames[static_cast<int>(v.variant)]) + "_" + format_test_name(v.format);
}

void PrintTo(const VariantCell& v, std::ostream* os) { *os << cell_name(v); }

InsertCase case_for(const VariantCell& v) {
  Rng rng(23 + static_cast<std::uint64_t>(v.format));
  CacheShape shape{v.format, kBlocks, kBlockSize, 64, is_packed(v.format) ? 0 : 32, 0};
  KvInputs in;
  in.kv = random_bf16_rows(rng, kRows);
  v.inputs(in.kv);
  in.slots = rng.distinct(kBlocks * kBlockSize, kRows - 2);
  in.slots[4] = -1;
  for (std::int64_t t = 0; t < kRows; ++t) in.positions.push_back(rng.uniform(0, kMaxPos - 1));
  in.cos_sin = random_cos_sin(rng, kMaxPos);
  in.fp8_scale = v.fp8_scale;
  return make_kv_only_case(shape, in);
}

std::vector<std::int64_t> live_rows(const InsertCase& c) {
  std::vector<std::int64_t> rows;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (c.slots.load<std::int64_t>(t) >= 0) rows.push_back(t);
  return rows;
}

class RowVariantClass : public ::testing::TestWithParam<VariantCell> {
 protected:
  void SetUp() override {
    c_ = case_for(GetParam());
    initial_ = make_outputs(c_).cache;
    InsertOutputs out = make_outputs(c_);
    ASSERT_TRUE(OracleBackend().run(c_, out).ok());
    expected_ = out.cache;
  }
  // The oracle's bytes with the variant planted on `rows`.
  Bytes planted_on(const std::vector<std::int64_t>& rows) const {
    Bytes b = expected_;
    const oracle::PagedCacheView view = view_of(c_);
    for (std::int64_t t : rows) GetParam().plant(c_, view, t, c_.slots.load<std::int64_t>(t), b);
    return b;
  }
  MismatchClassification classify(const Bytes& actual) const {
    return classify_insert_mismatches(c_, kvc::vllm_profile(), initial_, expected_, actual);
  }
  MismatchClass want() const {
    switch (GetParam().variant) {
      case RowVariant::kRopeNeoxInLane: return MismatchClass::kRopePattern;
      case RowVariant::kFp8ScaleMultiplied:
      case RowVariant::kFp8ScaleDivided: return MismatchClass::kTensorScale;
      default: return MismatchClass::kSaturationNan;
    }
  }

  InsertCase c_;
  Bytes initial_, expected_;
};

TEST_P(RowVariantClass, Named) {
  ASSERT_TRUE(variant_applies(GetParam().variant, c_, kvc::vllm_profile()));
  const std::vector<std::int64_t> rows = live_rows(c_);
  const MismatchClassification m = classify(planted_on(rows));
  std::printf("%s", m.report().c_str());
  EXPECT_EQ(m.count(want()), static_cast<std::int64_t>(rows.size()))
      << "every planted row differs and is named " << mismatch_class_name(want()) << "\n"
      << m.report();
  EXPECT_EQ(m.total_sites(), m.count(want())) << m.report();
  const std::string description = "reproduced by: " + std::string(describe_variant(GetParam().variant));
  for (const ClassifiedSite& site : m.shown.at(want())) EXPECT_EQ(site.detail, description) << site.where;
}

TEST_P(RowVariantClass, NotClaimed) {
  const std::vector<std::int64_t> rows = live_rows(c_);
  std::vector<std::int64_t> planted;
  for (std::size_t i = 0; i < rows.size(); i += 2) planted.push_back(rows[i]);
  Bytes actual = planted_on(planted);
  // One bit of a correct record: no alternative produces it.
  const oracle::PagedCacheView view = view_of(c_);
  actual[static_cast<std::size_t>(oracle::token_data_offset(view, c_.slots.load<std::int64_t>(rows[1])) + 40)] ^= 0x40;
  const MismatchClassification m = classify(actual);
  EXPECT_EQ(m.count(want()), static_cast<std::int64_t>(planted.size())) << m.report();
  EXPECT_EQ(m.count(MismatchClass::kUnexplained), 1) << "the flipped record must stay unexplained\n" << m.report();
  EXPECT_EQ(m.total_sites(), static_cast<std::int64_t>(planted.size()) + 1) << "the rows left correct make no site\n"
                                                                            << m.report();
}

INSTANTIATE_TEST_SUITE_P(Variants, RowVariantClass, ::testing::ValuesIn(cells()),
                         [](const ::testing::TestParamInfo<VariantCell>& p) { return cell_name(p.param); });

// The encoder of kE4m3NoSaturation against the search above, over the values that matter: around
// the range end, NaN, Inf, zeros, subnormals and random normals.
TEST(RowVariantEncoders, E4m3WithoutSaturationMatchesTheSearch) {
  std::vector<float> values = {0.0f,       -0.0f,  448.0f,  -448.0f,  456.0f,       464.0f,   -464.0f,
                               464.00003f, 465.0f, 480.0f,  1e30f,    -1e30f,       INFINITY, -INFINITY,
                               NAN,        -NAN,   0x1p-9f, 0x1p-10f, 3 * 0x1p-10f, 17.0f};
  Rng rng(5);
  for (int i = 0; i < 20000; ++i) values.push_back(std::ldexp(rng.normal(), static_cast<int>(rng.uniform(-12, 10))));
  for (float v : values) EXPECT_EQ(e4m3_without_saturation(v), e4m3_nosat_by_search(v)) << v;
  EXPECT_EQ(e4m3_without_saturation(NAN), 0x7F);
  EXPECT_EQ(e4m3_without_saturation(-INFINITY), 0xFF);
}

}  // namespace
}  // namespace kvc::testkit
