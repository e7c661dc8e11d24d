// kv_insert_edge_test.cpp: the edge values of docs/contract.md §3.6-3.7 through the whole KV path, every
// expected byte derived by hand in the table below (not by the oracle's encoder).
//
// Packed formats: block k (64 dims for packed584, 32 for packed528) gets one crafted content.
// RoPE uses cos = 1, sin = 0 so the crafted values reach quantization unchanged.
//
// EveryNegativeSlotWritesNothing (§3.1) catches a `slot == -1` test where the contract skips every
// negative slot: with the cache 4096 bytes into its backing, such a row lands inside the backing
// (before the cache, or in page 0) and shows as a changed canary, not as an out-of-bounds write.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"

namespace kvc {
namespace {

struct BlockCase {
  const char* what;
  std::uint16_t fill;                         // bf16 bits of every other element
  std::map<int, std::uint16_t> special;       // element offset in block -> bf16 bits
  std::uint8_t scale_byte;                    // expected
  std::uint8_t fill_code;                     // expected code of the fill elements
  std::map<int, std::uint8_t> special_codes;  // expected codes of the specials
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
  const std::size_t count =
      std::min<std::size_t>(cases.size() - first_case, static_cast<std::size_t>(kNopeDim / width));
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

// A one-token case at slot 1 of a 2-slot page with the given cos/sin row at position 0.
InsertCase edge_case_with_table(RecordFormat f, const std::vector<std::uint16_t>& row, float cos_all, float sin_all) {
  InsertCase c = edge_case(f, row);
  for (int j = 0; j < kRopePairs; ++j) {
    c.cos_sin.store<float>(j, cos_all);
    c.cos_sin.store<float>(kRopePairs + j, sin_all);
  }
  return c;
}

// The record bytes of slot 1, and a check that slot 0 and everything else kept the canary.
std::vector<std::uint8_t> record_of_slot1(const InsertCase& c, const InsertOutputs& out) {
  const oracle::PagedCacheView v = oracle::PagedCacheView::of(c.cache, resolve_or_throw(c).format);
  const std::int64_t data = oracle::token_data_offset(v, 1);
  const int n = v.layout().data_bytes;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(out.cache.size()); ++i) {
    if (i < data || i >= data + n) {
      EXPECT_EQ(out.cache[static_cast<std::size_t>(i)], testkit::kCanary) << "byte " << i << " outside the record";
    }
  }
  return std::vector<std::uint8_t>(out.cache.begin() + data, out.cache.begin() + data + n);
}

// Contract version 2 (docs/contract.md §3.6): bf16_512 stores every dim through bf(), so a NaN in
// a NoPE dim becomes 0x7FFF whatever its sign and payload; every other NoPE value keeps its bits.
// RoPE with cos = 0, sin = 1 maps a pair (a, b) to (fma(a, 0, -b), fma(a, 1, b * 0)) = (-b, a)
// exactly, and to (NaN, NaN) when either is NaN. Every expected byte below is written by hand.
std::vector<std::uint16_t> nan_payload_row() {
  std::vector<std::uint16_t> row(kHeadDim, 0x3F80);  // 1.0
  const std::uint16_t payloads[] = {0xFFC0, 0x7F81, 0xFFA5, 0x7FC0};
  for (int i = 0; i < 4; ++i) row[i] = payloads[i];  // NoPE dims 0..3
  row[4] = 0x8000;                                   // -0
  row[5] = 0x0001;                                   // smallest subnormal
  row[6] = 0xFF80;                                   // -Inf
  row[7] = 0x7F80;                                   // +Inf
  row[kNopeDim + 0] = 0xFFC0;                        // pair 0: (NaN, 1)
  row[kNopeDim + 3] = 0x7F81;                        // pair 1: (1, NaN)
  row[kNopeDim + 4] = 0xFFA5;                        // pair 2: (NaN, NaN)
  row[kNopeDim + 5] = 0x7FC0;
  row[kNopeDim + 7] = 0x4000;  // pair 3: (1, 2)
  return row;
}

std::vector<std::uint8_t> nan_payload_record_by_hand() {
  std::vector<std::uint8_t> b;
  auto put = [&](std::uint8_t lo, std::uint8_t hi) {
    b.push_back(lo);
    b.push_back(hi);
  };
  put(0xFF, 0x7F);                                                // dim 0: NaN 0xFFC0 -> 0x7FFF
  put(0xFF, 0x7F);                                                // dim 1: NaN 0x7F81 -> 0x7FFF
  put(0xFF, 0x7F);                                                // dim 2: NaN 0xFFA5 -> 0x7FFF
  put(0xFF, 0x7F);                                                // dim 3: NaN 0x7FC0 -> 0x7FFF
  put(0x00, 0x80);                                                // dim 4: -0 kept
  put(0x01, 0x00);                                                // dim 5: subnormal kept
  put(0x80, 0xFF);                                                // dim 6: -Inf kept
  put(0x80, 0x7F);                                                // dim 7: +Inf kept
  for (int d = 8; d < kNopeDim; ++d) put(0x80, 0x3F);             // 1.0 kept
  for (int d = kNopeDim; d < kNopeDim + 6; ++d) put(0xFF, 0x7F);  // pairs 0-2: NaN spreads to both
  put(0x00, 0xC0);                                                // pair 3 even: -2
  put(0x80, 0x3F);                                                // pair 3 odd: 1
  for (int j = 4; j < kRopePairs; ++j) {
    put(0x80, 0xBF);  // even: -1
    put(0x80, 0x3F);  // odd: 1
  }
  return b;
}

TEST(KvInsertEdgeValues, Bf16FullCacheStoresNopeNanAsCanonical) {
  const std::vector<std::uint8_t> expected = nan_payload_record_by_hand();
  ASSERT_EQ(expected.size(), 2u * kHeadDim);
  const InsertCase kv_only = edge_case_with_table(RecordFormat::kBf16_512, nan_payload_row(), 0.0f, 1.0f);
  InsertOutputs out = testkit::make_outputs(kv_only);
  ASSERT_TRUE(oracle::kv_only_insert(kv_only, out).ok());
  std::vector<std::uint8_t> got = record_of_slot1(kv_only, out);
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(got[i], expected[i]) << "KV-only: byte " << i << " (dim " << i / 2 << (i % 2 ? " high" : " low") << ")";

  // The legacy op's full-cache bf16 path stores the same KV bytes.
  testkit::QuerySpec q;
  q.heads = 1;
  q.padded_heads = 0;
  const InsertCase legacy = testkit::make_legacy_case(kv_only, q);
  out = testkit::make_outputs(legacy);
  ASSERT_TRUE(oracle::legacy_insert(legacy, out).ok());
  got = record_of_slot1(legacy, out);
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(got[i], expected[i]) << "legacy: byte " << i << " (dim " << i / 2 << (i % 2 ? " high" : " low") << ")";
}

TEST(KvInsertEdgeValues, Bf16FullCacheWithKvNormTurnsANanRowIntoCanonicalNan) {
  // kv_norm on: the NaN squares make S, r and every normed dim NaN, stored as 0x7FFF.
  InsertCase c = edge_case_with_table(RecordFormat::kBf16_512, nan_payload_row(), 0.0f, 1.0f);
  c.kv_norm_weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(oracle::kv_only_insert(c, out).ok());
  const std::vector<std::uint8_t> got = record_of_slot1(c, out);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i % 2 ? 0x7F : 0xFF) << "byte " << i;
}

// docs/contract.md §3.5: fp8_512 quantizes the fp32 RoPE result with no bf16 rounding in between.
// cos = 1, sin = 2^-20 rotate pair (1.0625, -1) to (1.0625 + 2^-20, -1 + 17 * 2^-24) exactly.
// 1.0625 is the e4m3 midpoint between 1.0 (0x38) and 1.125 (0x39): the value just above it
// encodes as 0x39, while its bf16 rounding (1.0625 exactly) would tie to even, 0x38.
TEST(KvInsertEdgeValues, Fp8FullCacheRopeDimsAreNotBf16Rounded) {
  std::vector<std::uint16_t> row(kHeadDim, 0x3F80);  // 1.0
  row[kNopeDim] = 0x3F88;                            // 1.0625
  row[kNopeDim + 1] = 0xBF80;                        // -1
  const InsertCase kv_only = edge_case_with_table(RecordFormat::kFp8_512, row, 1.0f, 0x1p-20f);
  std::vector<std::uint8_t> expected(kHeadDim, 0x38);  // 1.0; other pairs (1, 1) -> (1 - 2^-20, 1 + 2^-20) -> 1.0
  expected[kNopeDim] = 0x39;                           // 1.0625 + 2^-20 rounds up (0x38 if it were bf16-rounded first)
  expected[kNopeDim + 1] = 0xB8;                       // -0.99999899 -> -1.0
  testkit::QuerySpec q;
  q.heads = 1;
  q.padded_heads = 0;
  for (const InsertCase& c : {kv_only, testkit::make_legacy_case(kv_only, q)}) {
    SCOPED_TRACE(c.op == InsertOp::kLegacy ? "legacy" : "KV-only");
    InsertOutputs out = testkit::make_outputs(c);
    ASSERT_TRUE((c.op == InsertOp::kLegacy ? oracle::legacy_insert(c, out) : oracle::kv_only_insert(c, out)).ok());
    const std::vector<std::uint8_t> got = record_of_slot1(c, out);
    for (int d = 0; d < kHeadDim; ++d) ASSERT_EQ(got[d], expected[d]) << "dim " << d;
  }
}

// Slots -2 and -3 (page 0, index -2 and -3 if taken as indices) and -1, in every format, in a
// cache of 2 pages x 4 tokens that starts 4096 bytes into its backing: every byte keeps the canary.
TEST(KvInsertEdgeValues, EveryNegativeSlotWritesNothing) {
  for (RecordFormat f : kAllFormats) {
    SCOPED_TRACE(std::string(layout_of(f).name));
    testkit::KvInputs in;
    in.kv.assign(3 * kHeadDim, 0x3F80);
    in.slots = {-2, -3, -1};
    in.positions = {0, 0, 0};
    in.cos_sin.assign(kRopeDim, 0.0f);
    for (int j = 0; j < kRopePairs; ++j) in.cos_sin[j] = 1.0f;
    const InsertCase c = testkit::make_kv_only_case(testkit::CacheShape{f, 2, 4, 0, 0, 4096}, in);
    InsertOutputs out = testkit::make_outputs(c);
    ASSERT_TRUE(oracle::kv_only_insert(c, out).ok());
    for (std::size_t i = 0; i < out.cache.size(); ++i) ASSERT_EQ(out.cache[i], testkit::kCanary) << "byte " << i;
  }
}

}  // namespace
}  // namespace kvc
