// bytes_moved_test.cpp: the traffic model against hand counts, one case per format.
//
// Defects caught: a record width typed by hand or taken from the wrong layout row, -1 slots
// counted as live rows (or their slot reads dropped), the legacy Q side counted over the inserted
// rows instead of all rows, pad heads not counted as written, an in-place bf16 Q counted once, the
// fp8 and kv_norm scalars forgotten; and the benchmark's metadata-only legacy case drifting from
// the testkit's make_legacy_case shapes.
#include "bytes_moved.h"

#include <gtest/gtest.h>

#include "bench_cases.h"
#include "testkit/cases/case_builder.h"

namespace kvc::bench {
namespace {

// `rows` random kv rows on one page of 16 tokens, with the given slot_mapping.
InsertCase small_kv_only(RecordFormat f, std::int64_t rows, std::vector<std::int64_t> slots) {
  testkit::Rng rng(3);
  testkit::KvInputs in;
  in.kv = testkit::random_bf16_rows(rng, rows);
  in.slots = std::move(slots);
  in.positions.assign(static_cast<std::size_t>(rows), 1);
  in.cos_sin = testkit::random_cos_sin(rng, 4);
  testkit::CacheShape shape;
  shape.format = f;
  shape.num_blocks = 1;
  shape.block_size = 16;
  return testkit::make_kv_only_case(shape, in);
}

// The legacy case over small_kv_only's rows with `heads` query heads padded to `padded_heads`.
InsertCase small_legacy(RecordFormat f, std::int64_t rows, std::vector<std::int64_t> slots, std::int64_t heads,
                        std::int64_t padded_heads) {
  testkit::QuerySpec q;
  q.heads = heads;
  q.padded_heads = padded_heads;
  return testkit::make_legacy_case(small_kv_only(f, rows, std::move(slots)), q);
}

TEST(BytesMoved, Packed584KvOnlyCountsLiveRowsAndEverySlot) {
  const InsertCase c = small_kv_only(RecordFormat::kPacked584, 3, {5, -1, 9});
  const BytesMoved b = insert_bytes_moved(c);
  // 2 live rows: kv 2 x 1024, slots 3 x 8, positions 2 x 8, cos/sin 2 x 64 x 4, records 2 x 584.
  EXPECT_EQ(b.kv_read, 2048);
  EXPECT_EQ(b.slots_read, 24);
  EXPECT_EQ(b.positions_read, 16);
  EXPECT_EQ(b.cos_sin_read, 512);
  EXPECT_EQ(b.records_written, 1168);
  EXPECT_EQ(b.q_read + b.q_written + b.scalars_read, 0);
  EXPECT_EQ(b.total(), 3768);
}

TEST(BytesMoved, Packed528LegacyCountsQOverAllRowsAndPadHeads) {
  const InsertCase c = small_legacy(RecordFormat::kPacked528, 3, {0, 1}, 2, 8);
  const BytesMoved b = insert_bytes_moved(c);
  // KV side: slot_mapping has 2 entries (row 2 is data-parallel padding, never inserted), so
  // 2 x (1024 kv + 8 slot + 8 position + 256 cos/sin + 528 record).
  EXPECT_EQ(b.records_written, 1056);
  EXPECT_EQ(b.slots_read, 16);
  // Q side over all 3 rows: 3 x 2 heads x 1024 read, 3 x 8 heads x 1024 written.
  EXPECT_EQ(b.q_read, 6144);
  EXPECT_EQ(b.q_written, 24576);
  EXPECT_EQ(b.total(), 2048 + 16 + 16 + 512 + 1056 + 6144 + 24576);
}

TEST(BytesMoved, Packed584LegacyWithoutHeadsHasNoQTraffic) {
  const InsertCase c = small_legacy(RecordFormat::kPacked584, 2, {1, 2}, 0, 0);
  const BytesMoved b = insert_bytes_moved(c);
  EXPECT_EQ(b.q_read + b.q_written, 0);
  EXPECT_EQ(b.records_written, 2 * 584);
}

TEST(BytesMoved, Fp8KvOnlyWithFusedNormCountsScaleAndWeight) {
  InsertCase c = small_kv_only(RecordFormat::kFp8_512, 2, {3, 7});
  c.kv_norm_weight = make_tensor(DType::kBF16, {kHeadDim});
  const BytesMoved b = insert_bytes_moved(c);
  // Records of 512 fp8 codes; scalars: the fp32 scale (4) and the bf16 weight row (1024).
  EXPECT_EQ(b.records_written, 1024);
  EXPECT_EQ(b.scalars_read, 1028);
  EXPECT_EQ(b.total(), 2048 + 16 + 16 + 512 + 1024 + 1028);
}

TEST(BytesMoved, Bf16LegacyCountsInPlaceQReadAndWritten) {
  testkit::QuerySpec q;
  q.heads = 4;
  const InsertCase c = testkit::make_legacy_case(small_kv_only(RecordFormat::kBf16_512, 2, {-1, 6}), q);
  const BytesMoved b = insert_bytes_moved(c);
  // 1 live row: 1024 + 8 + 256 + a 1024-byte bf16 record; 2 slots; Q 2 x 4 x 1024 each way.
  EXPECT_EQ(b.records_written, 1024);
  EXPECT_EQ(b.q_read, 8192);
  EXPECT_EQ(b.q_written, 8192);
  EXPECT_EQ(b.total(), 1024 + 16 + 8 + 256 + 1024 + 8192 + 8192);
}

TEST(BytesMoved, StandaloneKvNormReadsAndWritesEveryRow) {
  const BytesMoved b = kv_norm_bytes_moved(3);
  EXPECT_EQ(b.kv_read, 3072);
  EXPECT_EQ(b.norm_out_written, 3072);
  EXPECT_EQ(b.total(), 3072 + 1024 + 3072);
}

TEST(BenchLegacyCase, MatchesTestkitShapesInEveryFormat) {
  for (RecordFormat f : kAllFormats) {
    SCOPED_TRACE(std::string(layout_of(f).name));
    const InsertCase kv_only = small_kv_only(f, 3, {4, 2, -1});
    testkit::QuerySpec q;
    q.heads = 8;
    q.padded_heads = 8;
    const InsertCase expected = testkit::make_legacy_case(kv_only, q);
    const InsertCase actual = bench_legacy_case(kv_only, 8);
    EXPECT_EQ(actual.op, InsertOp::kLegacy);
    EXPECT_EQ(actual.q.meta.sizes, expected.q.meta.sizes);
    EXPECT_EQ(actual.q.meta.dtype, expected.q.meta.dtype);
    EXPECT_EQ(actual.q_out.sizes, expected.q_out.sizes);
    EXPECT_EQ(actual.q_out.strides, expected.q_out.strides);
    EXPECT_EQ(actual.q_out.dtype, expected.q_out.dtype);
    EXPECT_EQ(actual.q_scale_inv.present, expected.q_scale_inv.present);
    EXPECT_EQ(insert_bytes_moved(actual).total(), insert_bytes_moved(expected).total());
  }
}

}  // namespace
}  // namespace kvc::bench
