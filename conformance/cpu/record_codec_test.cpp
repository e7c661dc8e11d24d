// record_codec_test.cpp: one hand-built token per format, checked byte by byte at offsets
// computed here from the layout tables of docs/contract.md §3 (not from the codec), then decoded.
//
// The token's values are chosen so every field is known in closed form: NoPE dim d of 64-dim
// block k holds (d % 8 + 1) * 2^(k-3), so the block's amax is 2^k, its exponent
// ceil(log2(2^k / 448)) = k - 8 and its codes are (d % 8 + 1) * 32 = e4m3 0x60..0x78. RoPE uses
// cos = 1, sin = 0, which leaves the values unchanged.
//
// OffsetsPastTwoGiBStaySixtyFourBit: the address functions far into a large cache, where a page
// starts past 2^31 bytes, against offsets written out by hand. Catches: a page or row offset held
// in 32 bits (it wraps there); no CPU case has a cache that large, so nothing else would.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/record_codec.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"

namespace kvc {
namespace {

constexpr std::uint8_t kCodeOfMultiple[8] = {0x60, 0x68, 0x6C, 0x70, 0x72, 0x74, 0x76, 0x78};  // 32..256
constexpr std::int64_t kBlocks = 3, kBlockSize = 4, kPadding = 48, kBase = 32, kSlot = 1 * kBlockSize + 2;

float nope_value(int d) { return static_cast<float>(d % 8 + 1) * std::ldexp(1.0f, d / 64 - 3); }
float rope_value(int j) { return static_cast<float>(j - 32) * 0.5f; }  // dim 448 + j
std::uint16_t bf16_bits_of_exact(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<std::uint16_t>(u >> 16);  // v is bf16-exact, so truncation is the value
}

InsertCase layout_case(RecordFormat f) {
  testkit::CacheShape shape{
      f, kBlocks, kBlockSize, kPadding, f == RecordFormat::kBf16_512 || f == RecordFormat::kFp8_512 ? 32 : 0, kBase};
  testkit::KvInputs in;
  in.kv.resize(kHeadDim);
  for (int d = 0; d < kNopeDim; ++d) in.kv[d] = bf16_bits_of_exact(nope_value(d));
  for (int j = 0; j < kRopeDim; ++j) in.kv[kNopeDim + j] = bf16_bits_of_exact(rope_value(j));
  in.slots = {kSlot};
  in.positions = {0};
  in.cos_sin.assign(kRopeDim, 0.0f);
  for (int j = 0; j < kRopePairs; ++j) in.cos_sin[j] = 1.0f;
  in.fp8_scale = 0.5f;
  return testkit::make_kv_only_case(shape, in);
}

// Bytes that differ from the canary in either of two runs with different canaries: exactly the
// bytes the op wrote, even where a written value happens to equal one canary.
std::set<std::int64_t> written_offsets(const InsertCase& c, std::vector<std::uint8_t>* backing_a5) {
  std::set<std::int64_t> written;
  for (std::uint8_t canary : {std::uint8_t{0xA5}, std::uint8_t{0x5A}}) {
    InsertOutputs out = testkit::make_outputs(c, canary);
    const Status s = oracle::kv_only_insert(c, out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (std::size_t i = 0; i < out.cache.size(); ++i)
      if (out.cache[i] != canary) written.insert(static_cast<std::int64_t>(i));
    if (canary == 0xA5) *backing_a5 = out.cache;
  }
  return written;
}

// Where slot kSlot (page 1, token 2) of a packed format sits, by the page layout of
// docs/contract.md §3: [block_size x data bytes][block_size x scale bytes][padding].
struct PackedToken {
  std::int64_t data = 0;    // the token's first data byte
  std::int64_t scales = 0;  // the token's first scale byte
  std::set<std::int64_t> offsets;
};

PackedToken packed_token(std::int64_t record_bytes, std::int64_t data_bytes, std::int64_t scale_bytes) {
  const std::int64_t page = kBase + 1 * (record_bytes * kBlockSize + kPadding);
  PackedToken t;
  t.data = page + data_bytes * 2;
  t.scales = page + data_bytes * kBlockSize + scale_bytes * 2;
  for (std::int64_t i = 0; i < data_bytes; ++i) t.offsets.insert(t.data + i);
  for (std::int64_t i = 0; i < scale_bytes; ++i) t.offsets.insert(t.scales + i);
  return t;
}

TEST(RecordLayout, Packed584TokenAtItsOffsets) {
  const InsertCase c = layout_case(RecordFormat::kPacked584);
  std::vector<std::uint8_t> b;
  const PackedToken token = packed_token(584, 576, 8);
  EXPECT_EQ(written_offsets(c, &b), token.offsets) << "exactly the token's 576 data bytes and 8 scale bytes";
  const std::int64_t data = token.data, scales = token.scales;
  for (int d = 0; d < kNopeDim; ++d) ASSERT_EQ(b[data + d], kCodeOfMultiple[d % 8]) << "dim " << d;
  for (int j = 0; j < kRopeDim; ++j) {
    const std::uint16_t bits = bf16_bits_of_exact(rope_value(j));
    ASSERT_EQ(b[data + 448 + 2 * j], bits & 0xFF) << "RoPE dim " << 448 + j << " low byte first";
    ASSERT_EQ(b[data + 449 + 2 * j], bits >> 8) << "RoPE dim " << 448 + j;
  }
  for (int k = 0; k < 7; ++k) EXPECT_EQ(b[scales + k], 127 + k - 8) << "block " << k;
  EXPECT_EQ(b[scales + 7], 0x00) << "pad byte";

  const oracle::DecodedRecord r =
      oracle::decode_record(b, oracle::PagedCacheView::of(c.cache, RecordFormat::kPacked584), kSlot);
  for (int d = 0; d < kNopeDim; ++d) ASSERT_EQ(r.dequantized[d], nope_value(d)) << "dim " << d;
  for (int j = 0; j < kRopeDim; ++j) ASSERT_EQ(r.dequantized[kNopeDim + j], rope_value(j));
  EXPECT_EQ(r.pad, 0x00);
}

TEST(RecordLayout, Packed528TokenAtItsOffsets) {
  const InsertCase c = layout_case(RecordFormat::kPacked528);
  std::vector<std::uint8_t> b;
  const PackedToken token = packed_token(528, 512, 16);
  EXPECT_EQ(written_offsets(c, &b), token.offsets);
  const std::int64_t data = token.data, scales = token.scales;
  for (int d = 0; d < kNopeDim; ++d) ASSERT_EQ(b[data + d], kCodeOfMultiple[d % 8]) << "dim " << d;
  for (int m = 0; m < 14; ++m) EXPECT_EQ(b[scales + m], 127 + m / 2 - 8) << "block " << m;
  // RoPE blocks: dims 448..479 hold -16..-0.5 (amax 16, E = ceil(log2(16/448)) = -4), dims 480..511
  // hold 0..15.5 (amax 15.5, E = -4). Scaled by 2^4 they are integers/8-multiples that e4m3 holds.
  EXPECT_EQ(b[scales + 14], 123);
  EXPECT_EQ(b[scales + 15], 123);
  const oracle::DecodedRecord r =
      oracle::decode_record(b, oracle::PagedCacheView::of(c.cache, RecordFormat::kPacked528), kSlot);
  for (int d = 0; d < kNopeDim; ++d) ASSERT_EQ(r.dequantized[d], nope_value(d));
  EXPECT_EQ(r.dequantized[448], -16.0f);  // -256 * 2^-4: code 0xF8
  EXPECT_EQ(b[data + 448], 0xF8);
  EXPECT_EQ(r.dequantized[480], 0.0f);
  // 15.5 * 2^4 = 248 is a tie between 240 (code 0x77, odd) and 256 (0x78, even): 256, i.e. 16.
  EXPECT_EQ(b[data + 511], 0x78);
  EXPECT_EQ(r.dequantized[511], 16.0f);
}

TEST(RecordLayout, FullCachesWriteOneRowAtTheTokenStride) {
  for (RecordFormat f : {RecordFormat::kFp8_512, RecordFormat::kBf16_512}) {
    SCOPED_TRACE(std::string(layout_of(f).name));
    const InsertCase c = layout_case(f);
    std::vector<std::uint8_t> b;
    const std::set<std::int64_t> written = written_offsets(c, &b);
    const std::int64_t row_bytes = f == RecordFormat::kFp8_512 ? 512 : 1024;
    const std::int64_t token_stride = row_bytes + 32;
    const std::int64_t page = kBase + 1 * (kBlockSize * token_stride + kPadding);
    const std::int64_t row = page + 2 * token_stride;
    std::set<std::int64_t> expected_offsets;
    for (std::int64_t i = 0; i < row_bytes; ++i) expected_offsets.insert(row + i);
    EXPECT_EQ(written, expected_offsets);
    const oracle::DecodedRecord r = oracle::decode_record(b, oracle::PagedCacheView::of(c.cache, f), kSlot, 0.5f);
    for (int d = 0; d < kNopeDim; ++d) {
      if (f == RecordFormat::kBf16_512) {
        ASSERT_EQ(b[row + 2 * d], c.kv.bytes[2 * d]) << "input bits kept, dim " << d;
        ASSERT_EQ(b[row + 2 * d + 1], c.kv.bytes[2 * d + 1]);
      }
      // fp8: x * fl(1/0.5) = 2x, an exact e4m3 value for these inputs; decoded times the scale.
      ASSERT_EQ(r.dequantized[d], nope_value(d)) << "dim " << d;
    }
  }
}

TEST(RecordDecoder, AcceptsArbitraryBytes) {
  testkit::Rng rng(3);
  for (RecordFormat f : kAllFormats) {
    InsertCase c = layout_case(f);
    std::vector<std::uint8_t> b(static_cast<std::size_t>(c.cache.backing_bytes()));
    for (auto& x : b) x = static_cast<std::uint8_t>(rng.bits());
    b[static_cast<std::size_t>(kBase + 10)] = 0xFF;  // NaN scale somewhere
    const oracle::PagedCacheView v = oracle::PagedCacheView::of(c.cache, f);
    for (std::int64_t slot = 0; slot < v.capacity(); ++slot) (void)oracle::decode_record(b, v, slot);
    for (std::int64_t off = -4; off < static_cast<std::int64_t>(b.size()) + 4; off += 7) {
      const oracle::ByteLocation loc = oracle::locate(v, off);
      if (loc.slot >= 0) (void)oracle::describe_field(b, v, loc);
    }
    // A view larger than the buffer: decoding past the end reads zeros instead of crashing.
    (void)oracle::decode_record(std::vector<std::uint8_t>(8), v, v.capacity() - 1);
  }
  SUCCEED();
}

TEST(RecordLocate, ClassifiesEveryRegion) {
  const InsertCase c = layout_case(RecordFormat::kPacked584);
  const oracle::PagedCacheView v = oracle::PagedCacheView::of(c.cache, RecordFormat::kPacked584);
  const std::int64_t page1 = kBase + 584 * kBlockSize + kPadding;
  EXPECT_EQ(oracle::locate(v, kBase - 1).field, oracle::Field::kOutsideCache);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 2 + 5).field, oracle::Field::kFp8Code);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 2 + 5).slot, kSlot);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 2 + 130).scale_block, 2);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 2 + 449).field, oracle::Field::kValue16);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 2 + 449).dim, 448);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 2 + 449).byte_in_value, 1);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 4 + 8 * 2 + 3).field, oracle::Field::kScale);
  EXPECT_EQ(oracle::locate(v, page1 + 576 * 4 + 8 * 2 + 7).field, oracle::Field::kScalePad);
  EXPECT_EQ(oracle::locate(v, page1 + 584 * 4).field, oracle::Field::kPagePadding);
  EXPECT_EQ(oracle::locate(v, kBase + kBlocks * (584 * kBlockSize + kPadding)).field, oracle::Field::kOutsideCache);
}

// Worked example 4's packed584 pages (bs = 64, P = 37440) at page 60000, which starts
// 60000 * 37440 = 2 246 400 000 bytes in, past 2^31; and bf16_512 rows of 1056 bytes (a 32-byte
// row gap) in pages of 16 * 1056 + 32 = 16928 bytes at page 130000 (2 200 640 000 bytes in). The
// ops write through these functions; a cache this large exists only in the GPU suite
// (large_cache_test), so the arithmetic is checked here without a backing.
TEST(RecordLayout, OffsetsPastTwoGiBStaySixtyFourBit) {
  oracle::PagedCacheView packed;
  packed.format = RecordFormat::kPacked584;
  packed.base_offset = 64;
  packed.num_blocks = 60001;
  packed.block_size = 64;
  packed.page_stride_bytes = 37440;
  const std::int64_t slot = 60000 * 64 + 5;                         // page 60000, token 5
  EXPECT_EQ(oracle::token_data_offset(packed, slot), 2246402944);   // 64 + 2246400000 + 5 * 576
  EXPECT_EQ(oracle::token_scale_offset(packed, slot), 2246436968);  // ... + 64 * 576 + 5 * 8
  const oracle::ByteLocation pad = oracle::locate(packed, 2246436968 + 7);
  EXPECT_EQ(pad.field, oracle::Field::kScalePad);
  EXPECT_EQ(pad.slot, slot);

  oracle::PagedCacheView full;
  full.format = RecordFormat::kBf16_512;
  full.base_offset = 64;
  full.num_blocks = 130001;
  full.block_size = 16;
  full.page_stride_bytes = 16928;
  full.token_stride_bytes = 1056;
  const std::int64_t row = 130000 * 16 + 3;                     // page 130000, token 3
  EXPECT_EQ(oracle::token_data_offset(full, row), 2200643232);  // 64 + 2200640000 + 3 * 1056
  const oracle::ByteLocation gap = oracle::locate(full, 2200643232 + 1024);
  EXPECT_EQ(gap.field, oracle::Field::kRowGap);
  EXPECT_EQ(gap.slot, row);
}

}  // namespace
}  // namespace kvc
