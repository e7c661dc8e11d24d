// kv_insert_edge_test.cpp: the edge values of SPEC.md §3.7 through the whole KV path, every
// expected byte derived by hand in the table below (not by the oracle's encoder).
//
// Packed formats: block k (64 dims for packed584, 32 for packed528) gets one crafted content.
// RoPE uses cos = 1, sin = 0 so the crafted values reach quantization unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/testkit/backing.h"
#include "kvc/testkit/case_builder.h"

namespace kvc {
namespace {

struct BlockCase {
  const char* what;
  std::uint16_t fill;                              // bf16 bits of every other element
  std::map<int, std::uint16_t> special;            // element offset in block -> bf16 bits
  std::uint8_t scale_byte;                         // expected
  std::uint8_t fill_code;                          // expected code of the fill elements
  std::map<int, std::uint8_t> special_codes;       // expected codes of the specials
};

// bf16 bits: 1.0 = 0x3F80, -1.0 = 0xBF80, 0.5 = 0x3F00, 1000 = 0x447A, 896 = 0x4460, 900 = 0x4461,
// 892 = 0x445F, 0.001 ~ 0x3A83, +Inf = 0x7F80, NaN = 0x7FC0, -0 = 0x8000, subnormal 0x0001/0x807F.
const std::vector<BlockCase>& block_cases() {
  static const std::vector<BlockCase> cases = {
      // amax 1 (NaN ignored): E = ceil(log2(1/448)) = -8, byte 119; 1 * 2^8 = 256 -> 0x78; NaN -> -448.
      {"NaN element", 0x3F80, {{3, 0x7FC0}}, 119, 0x78, {{3, 0xFE}}},
      // Inf: E = +Inf, byte 0xFF, inv = 0: finite -> +-0, Inf * 0 = NaN -> 0xFE.
      {"+Inf element", 0x3F80, {{0, 0x7F80}, {1, 0xBF80}}, 0xFF, 0x00, {{0, 0xFE}, {1, 0x80}}},
      // All zero: amax floors at 1e-4, E = -22, byte 105; -0 keeps its sign.
      {"all zero with -0", 0x0000, {{2, 0x8000}}, 105, 0x00, {{2, 0x80}}},
      // bf16 subnormals: below the floor too; 2^-133 * 2^22 underflows e4m3 to +-0.
      {"bf16 subnormals", 0x0001, {{4, 0x807F}}, 105, 0x00, {{4, 0x80}}},
      // Outlier 1000: E = ceil(log2(1000/448)) = 2, byte 129; 250 -> 256 (0x78); 0.001/4 -> 0.
      {"single outlier", 0x3A83, {{5, 0x447A}}, 129, 0x00, {{5, 0x78}}},
      // amax 896 = 448 * 2: E = 1 exactly, byte 128; 896/2 = 448 (0x7E); 1/2 -> 0x30.
      {"amax 448*2^1", 0x3F80, {{7, 0x4460}}, 128, 0x30, {{7, 0x7E}}},
      // amax 900, one bf16 ulp above: E = 2, byte 129; 225 -> 224 (0x76); 1/4 -> 0x28.
      {"amax one ulp above", 0x3F80, {{9, 0x4461}}, 129, 0x28, {{9, 0x76}}},
      // amax 892, one bf16 ulp below: E = 1, byte 128; 446 -> 448 (0x7E).
      {"amax one ulp below", 0x3F80, {{11, 0x445F}}, 128, 0x30, {{11, 0x7E}}},
  };
  return cases;
}

InsertCase edge_case(RecordFormat f, const std::vector<std::uint16_t>& row) {
  testkit::CacheShape shape{f, 1, 2, 0, 0, 0};
  testkit::KvInputs in;
  in.kv = row;
  in.slots = {1};
  in.positions = {0};
  in.cos_sin.assign(kRopeDim, 0.0f);
  for (int j = 0; j < kRopePairs; ++j) in.cos_sin[j] = 1.0f;
  in.fp8_scale = 1.0f;
  return testkit::make_kv_only_case(shape, in);
}

void check_packed(RecordFormat f, std::size_t first_case) {
  const RecordLayout& l = layout_of(f);
  const int width = l.quant_block_dims;
  std::vector<std::uint16_t> row(kHeadDim, 0x3F80);
  const auto& cases = block_cases();
  const std::size_t count = std::min<std::size_t>(cases.size() - first_case, static_cast<std::size_t>(kNopeDim / width));
  for (std::size_t b = 0; b < count; ++b) {
    const BlockCase& bc = cases[first_case + b];
    for (int i = 0; i < width; ++i) row[b * width + i] = bc.fill;
    for (const auto& [i, bits] : bc.special) row[b * width + i] = bits;
  }
  const InsertCase c = edge_case(f, row);
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(oracle::kv_only_insert(c, out).ok());
  const oracle::DecodedRecord r = oracle::decode_record(out.cache, oracle::PagedCacheView::of(c.cache, f), 1);
  for (std::size_t b = 0; b < count; ++b) {
    const BlockCase& bc = cases[first_case + b];
    SCOPED_TRACE(std::string(l.name) + " block " + std::to_string(b) + ": " + bc.what);
    EXPECT_EQ(r.scales[b], bc.scale_byte);
    for (int i = 0; i < width; ++i) {
      const auto it = bc.special_codes.find(i);
      EXPECT_EQ(r.codes[b * width + i], it == bc.special_codes.end() ? bc.fill_code : it->second) << "element " << i;
    }
  }
  if (f == RecordFormat::kPacked584) {
    EXPECT_EQ(r.pad, 0x00);
  }
}

TEST(KvInsertEdgeValues, Packed584Blocks) {
  check_packed(RecordFormat::kPacked584, 0);  // the first 7 block cases
  check_packed(RecordFormat::kPacked584, 7);  // the rest
}

TEST(KvInsertEdgeValues, Packed528Blocks) { check_packed(RecordFormat::kPacked528, 0); }

TEST(KvInsertEdgeValues, Fp8FullCacheClampsAndKeepsSign) {
  std::vector<std::uint16_t> row(kHeadDim, 0x3F80);
  row[0] = 0x7FC0;  // NaN -> clamp -> -448 -> 0xFE
  row[1] = 0x7F80;  // +Inf -> 448 -> 0x7E
  row[2] = 0xFF80;  // -Inf -> 0xFE
  row[3] = 0x8000;  // -0 -> 0x80
  row[4] = 0x4780;  // 65536 saturates -> 0x7E
  const InsertCase c = edge_case(RecordFormat::kFp8_512, row);
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(oracle::kv_only_insert(c, out).ok());
  const std::int64_t data = oracle::token_data_offset(oracle::PagedCacheView::of(c.cache, RecordFormat::kFp8_512), 1);
  const std::uint8_t expected[] = {0xFE, 0x7E, 0xFE, 0x80, 0x7E, 0x38};
  for (int d = 0; d < 6; ++d) EXPECT_EQ(out.cache[data + d], expected[d]) << "dim " << d;
}

TEST(KvInsertEdgeValues, Bf16FullCacheKeepsNopeBitsAndRoundsRope) {
  std::vector<std::uint16_t> row(kHeadDim, 0x3F80);
  row[0] = 0x7FC1;       // NaN with payload: NoPE dims keep the input bits
  row[1] = 0x0001;       // subnormal kept
  row[kNopeDim] = 0xFFC3;  // NaN in a RoPE dim: fma gives NaN, bf() makes it the canonical 0x7FFF
  const InsertCase c = edge_case(RecordFormat::kBf16_512, row);
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(oracle::kv_only_insert(c, out).ok());
  const std::int64_t data = oracle::token_data_offset(oracle::PagedCacheView::of(c.cache, RecordFormat::kBf16_512), 1);
  auto at = [&](int d) { return static_cast<std::uint16_t>(out.cache[data + 2 * d] | (out.cache[data + 2 * d + 1] << 8)); };
  EXPECT_EQ(at(0), 0x7FC1);
  EXPECT_EQ(at(1), 0x0001);
  EXPECT_EQ(at(kNopeDim), oracle::kBf16CanonicalNan);
  EXPECT_EQ(at(kNopeDim + 1), oracle::kBf16CanonicalNan) << "fma(NaN, s, b*c) spreads NaN to its pair";
  EXPECT_EQ(at(kNopeDim + 2), 0x3F80) << "the next pair is untouched";
}

}  // namespace
}  // namespace kvc
