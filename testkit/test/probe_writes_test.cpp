// probe_writes_test.cpp: the probe's facts about a call's writes, on planted bytes.
//
// The oracle's bytes for a small valid case are what a conforming library writes: every changed
// byte must be located inside the addressed records, none outside. A byte planted in page
// padding, in a foreign slot, past the view, or a guard byte of the cache must be located there
// with its row and slot (for a slot past the cache, the slot's record one page on); a rejected
// call's write located in or out of the records; a changed input named as such. A row whose
// position lies outside the table with its record written must read as a read past the table, and
// not when the record was left alone. The same for the store op's view and the stacked op's pools.
// Catches: a locator that calls padding a record, that loses the row of a write past the cache,
// that reads a broken case's tensors past their bytes, or that crashes on a view it cannot walk.
#include <gtest/gtest.h>

#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"
#include "testkit/cases/store_cases.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/probe/classify_probe.h"
#include "testkit/probe/probe_writes.h"

namespace kvc::testkit {
namespace {

const RuleBreaker& breaker(const std::string& name) {
  for (const RuleBreaker& b : rule_breakers())
    if (b.name == name) return b;
  throw std::invalid_argument("no breaker " + name);
}

// The oracle's backing for a valid case: what a conforming library writes.
std::vector<std::uint8_t> oracle_backing(const InsertCase& c) {
  InsertOutputs out = make_outputs(c);
  OracleBackend oracle;
  EXPECT_TRUE(oracle.run(c, out).ok());
  return out.cache;
}

std::vector<const ProbeWrite*> outside(const ProbeObservation& o) {
  std::vector<const ProbeWrite*> v;
  for (const ProbeWrite& w : o.writes)
    if (w.site != WriteSite::kAddressedRecord) v.push_back(&w);
  return v;
}

ProbeVerdict verdict_of(const ProbeObservation& o, int right = 0) {
  ProbeInput in;
  in.child.reported = true;
  in.observed = o;
  in.expected.right_codes = {right};
  return classify_probe(in);
}

class ProbeInsertWrites : public ::testing::TestWithParam<RecordFormat> {};

TEST_P(ProbeInsertWrites, AConformingCallWritesOnlyItsRecords) {
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    const InsertCase c = small_valid_case(op, GetParam());
    const std::vector<std::uint8_t> before = make_outputs(c).cache, after = oracle_backing(c);
    ProbeObservation o;
    observe_insert_call(c, {}, before, &after, &o);
    ASSERT_EQ(o.writes.size(), 1u);
    EXPECT_EQ(o.writes[0].site, WriteSite::kAddressedRecord);
    EXPECT_EQ(o.writes[0].bytes, diff_case_backings(c, before, after).mismatch_count);
    EXPECT_TRUE(o.bad_rows.empty());
    EXPECT_EQ(verdict_of(o).cls, ProbeClass::kWroteInsideRecords);
  }
}

TEST_P(ProbeInsertWrites, PlantedStrayBytesAreLocated) {
  const InsertCase c = small_valid_case(InsertOp::kKvOnly, GetParam());
  const std::vector<std::uint8_t> before = make_outputs(c).cache, good = oracle_backing(c);
  const oracle::PagedCacheView view = view_of(c);
  const std::set<std::int64_t> live = addressed_slots(c);
  std::int64_t foreign = 0;
  while (live.count(foreign)) ++foreign;

  struct Plant {
    std::int64_t offset;
    std::string what;
    std::int64_t slot;
  };
  std::vector<Plant> plants = {{oracle::token_data_offset(view, foreign) + 3, "foreign slot", foreign},
                               {static_cast<std::int64_t>(before.size()) - 1, "outside the cache", -1}};
  const std::int64_t dense = is_packed(GetParam()) ? layout_of(GetParam()).dense_page_bytes(view.block_size)
                                                   : view.block_size * view.token_stride_bytes;
  if (view.page_stride_bytes > dense) plants.push_back({view.page_offset(0) + dense, "page padding", -1});
  for (const Plant& p : plants) {
    SCOPED_TRACE(p.what);
    std::vector<std::uint8_t> after = good;
    after[static_cast<std::size_t>(p.offset)] ^= 0xFF;
    ProbeObservation o;
    observe_insert_call(c, {}, before, &after, &o);
    const std::vector<const ProbeWrite*> stray = outside(o);
    ASSERT_EQ(stray.size(), 1u);
    EXPECT_EQ(stray[0]->what, p.what);
    EXPECT_EQ(stray[0]->offset, p.offset);
    EXPECT_EQ(stray[0]->bytes, 1);
    EXPECT_EQ(stray[0]->slot, p.slot);
    EXPECT_EQ(verdict_of(o).cls, ProbeClass::kWroteOutOfBounds);
  }
}

// A slot past the cache: the row is a bad row; a write where its record would be (the page after
// the last) is outside the cache in the backing's tail and in the guard after it, both with the
// row and slot.
TEST_P(ProbeInsertWrites, AWritePastTheCacheIsNamedWithItsRowAndSlot) {
  InsertCase c = small_valid_case(InsertOp::kKvOnly, GetParam());
  InsertOutputs out = make_outputs(c);
  ASSERT_TRUE(breaker("SlotBeyondTheCache").apply(c, out));
  const oracle::PagedCacheView view = view_of(c);
  const std::int64_t capacity = view.capacity();
  std::int64_t row = 0;
  while (c.slots.load<std::int64_t>(row) != capacity) ++row;

  std::vector<std::uint8_t> after = out.cache;
  const std::int64_t record = view.page_offset(c.cache.num_blocks);  // slot `capacity`: page num_blocks, token 0
  ASSERT_LT(record, static_cast<std::int64_t>(after.size()));
  for (std::int64_t i = record; i < static_cast<std::int64_t>(after.size()); ++i)
    after[static_cast<std::size_t>(i)] = 0x5A;
  const std::int64_t into_guard =
      record + layout_of(GetParam()).record_width * c.cache.element_bytes() - static_cast<std::int64_t>(after.size());
  ASSERT_GT(into_guard, 0);
  BufferDamage guard{
      kCacheBackingBuffer, kGuardAfterRegion, static_cast<std::int64_t>(after.size()), into_guard, 0, 0x5A, {}, {}};

  ProbeObservation o;
  observe_insert_call(c, {guard}, out.cache, &after, &o);
  ASSERT_EQ(o.bad_rows.size(), 1u);
  EXPECT_EQ(o.bad_rows[0].kind, BadRowKind::kSlotPastCache);
  EXPECT_EQ(o.bad_rows[0].row, row);
  EXPECT_EQ(o.bad_rows[0].limit, capacity);
  const std::vector<const ProbeWrite*> stray = outside(o);
  ASSERT_EQ(stray.size(), 2u);
  EXPECT_EQ(stray[0]->site, WriteSite::kGuardZone);
  EXPECT_EQ(stray[0]->what, kGuardAfterRegion);
  EXPECT_EQ(stray[1]->what, "outside the cache");
  EXPECT_EQ(stray[1]->offset, record);
  for (const ProbeWrite* w : stray) {
    EXPECT_EQ(w->row, row) << w->what;
    EXPECT_EQ(w->slot, capacity) << w->what;
  }
  const ProbeVerdict v = verdict_of(o);
  EXPECT_EQ(v.cls, ProbeClass::kWroteOutOfBounds);
  EXPECT_NE(v.where.find("(row " + std::to_string(row) + ", slot " + std::to_string(capacity) + ")"), std::string::npos)
      << v.where;
}

// A position outside the table: a library that skips the row leaves its record alone; one that
// writes it read the rotation from outside the table.
TEST_P(ProbeInsertWrites, ARecordWrittenFromAPositionOutsideTheTableIsARead) {
  InsertCase c = small_valid_case(InsertOp::kKvOnly, GetParam());
  const std::vector<std::uint8_t> written_by_all = oracle_backing(c);
  InsertOutputs out = make_outputs(c);
  ASSERT_TRUE(breaker("PositionAtMaxPos").apply(c, out));
  std::int64_t row = 0;
  while (c.positions.load<std::int64_t>(row) < c.cos_sin.meta.size(0)) ++row;
  InsertCase skipped = c;
  skipped.slots.store<std::int64_t>(row, -1);
  skipped.positions.store<std::int64_t>(row, 0);
  const std::vector<std::uint8_t> written_but_one = oracle_backing(skipped);

  ProbeObservation read, skip;
  observe_insert_call(c, {}, out.cache, &written_by_all, &read);
  observe_insert_call(c, {}, out.cache, &written_but_one, &skip);
  ASSERT_EQ(read.bad_rows.size(), 1u);
  EXPECT_EQ(read.bad_rows[0].kind, BadRowKind::kPositionOutsideTable);
  EXPECT_EQ(read.bad_rows[0].row, row);
  EXPECT_TRUE(read.bad_rows[0].record_written);
  EXPECT_EQ(verdict_of(read).cls, ProbeClass::kReadOutOfBounds);
  ASSERT_EQ(skip.bad_rows.size(), 1u);
  EXPECT_FALSE(skip.bad_rows[0].record_written);
  const ProbeVerdict v = verdict_of(skip);
  EXPECT_EQ(v.cls, ProbeClass::kWroteInsideRecords);
  EXPECT_NE(v.where.find("outside cos_sin_cache's 32 rows: skipped"), std::string::npos) << v.where;
}

INSTANTIATE_TEST_SUITE_P(Formats, ProbeInsertWrites, ::testing::ValuesIn(kAllFormats),
                         [](const ::testing::TestParamInfo<RecordFormat>& i) {
                           return std::string(layout_of(i.param).name);
                         });

TEST(ProbeDamage, ARejectedCallsWritesAndChangedInputsAreLocated) {
  const InsertCase c = small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  const std::vector<std::uint8_t> before = make_outputs(c).cache;
  const oracle::PagedCacheView view = view_of(c);
  const std::int64_t live = *addressed_slots(c).begin();
  const std::int64_t in_record = oracle::token_data_offset(view, live) + 7;
  const std::int64_t in_padding = view.page_offset(0) + layout_of(RecordFormat::kPacked584).dense_page_bytes(16) + 1;
  ProbeObservation o;
  o.status = 101;
  observe_insert_call(c,
                      {{kCacheBackingBuffer, kWrittenByRejectedCallRegion, in_record, 2, 0xA5, 0, {}, {}},
                       {kCacheBackingBuffer, kWrittenByRejectedCallRegion, in_padding, 1, 0xA5, 0, {}, {}},
                       {"position_ids", kInputChangedRegion, 8, 1, 0, 1, {}, {}},
                       {"q_out", kWrittenByRejectedCallRegion, 0, 4, 0xA5, 0, {}, {}}},
                      before, nullptr, &o);
  ASSERT_EQ(o.writes.size(), 4u);
  EXPECT_EQ(o.writes[0].site, WriteSite::kAddressedRecord);
  EXPECT_EQ(o.writes[0].slot, live);
  EXPECT_EQ(o.writes[0].what, "written by a rejected call (fp8 code)");
  EXPECT_EQ(o.writes[1].site, WriteSite::kOutsideRecords);
  EXPECT_EQ(o.writes[1].what, "written by a rejected call (page padding)");
  EXPECT_EQ(o.writes[2].site, WriteSite::kInput);
  EXPECT_EQ(o.writes[3].site, WriteSite::kAddressedRecord) << "q_out rows are the call's outputs";
  const ProbeVerdict v = verdict_of(o, 101);
  EXPECT_EQ(v.cls, ProbeClass::kWroteOutOfBounds);
  EXPECT_NE(v.where.find("(after returning 101 kKvDtype)"), std::string::npos) << v.where;
}

// Broken cases whose view the codec cannot walk (block size 0, a negative page stride), or whose
// slots are of another dtype, are located without reading past anything.
TEST(ProbeDamage, UnwalkableViewsAndOtherDtypesAreSafe) {
  for (const char* name : {"BlockSizeZero", "NegativePageStride", "SlotsInt32", "CacheDtypeFloat32", "KvMissing"}) {
    SCOPED_TRACE(name);
    InsertCase c = small_valid_case(InsertOp::kKvOnly, RecordFormat::kFp8_512);
    InsertOutputs out = make_outputs(c);
    ASSERT_TRUE(breaker(name).apply(c, out));
    std::vector<std::uint8_t> after = out.cache;
    after[5] ^= 1;
    ProbeObservation o;
    observe_insert_call(c, {{kCacheBackingBuffer, kWrittenByRejectedCallRegion, 5, 1, 0xA5, 0xA4, {}, {}}}, out.cache,
                        &after, &o);
    EXPECT_FALSE(o.writes.empty());
  }
}

TEST(ProbeStoreWrites, AnIndexPastTheCacheAndAForeignSlot) {
  for (StorePages pages : kAllStorePages) {
    SCOPED_TRACE(store_pages_name(pages));
    StoreCase c = small_valid_store_case(RecordFormat::kPacked584, pages);
    std::vector<std::uint8_t> before = make_store_backing(c), after = before;
    OracleBackend oracle;
    ASSERT_TRUE(oracle.run_store(c, after).ok());
    ProbeObservation good;
    observe_store_call(c, {}, before, &after, &good);
    ASSERT_EQ(good.writes.size(), 1u);
    EXPECT_EQ(good.writes[0].site, WriteSite::kAddressedRecord);

    for (const StoreRuleBreaker& b : store_rule_breakers())
      if (b.name == "IndexAtCapacity") b.apply(c, before);
    const oracle::PagedCacheView view = oracle::PagedCacheView::of(store_cache_geometry(c), RecordFormat::kPacked584);
    const auto named = [&c](std::int64_t slot) {
      for (std::int64_t t = 0; t < c.num_rows(); ++t)
        if (c.index(t) == slot) return true;
      return false;
    };
    std::int64_t foreign = 0;
    while (named(foreign)) ++foreign;
    std::vector<std::uint8_t> stray = before;
    stray[static_cast<std::size_t>(oracle::token_scale_offset(view, foreign))] ^= 1;
    ProbeObservation o;
    observe_store_call(c, {}, before, &stray, &o);
    ASSERT_EQ(o.bad_rows.size(), 1u);
    EXPECT_EQ(o.bad_rows[0].kind, BadRowKind::kSlotPastCache);
    EXPECT_EQ(o.bad_rows[0].row, 0);
    ASSERT_EQ(outside(o).size(), 1u);
    EXPECT_EQ(outside(o)[0]->what, "foreign slot");
    EXPECT_EQ(outside(o)[0]->slot, foreign);
  }
}

TEST(ProbeStackedWrites, PoolRowsForeignSlotsPastThePoolAndReadsPastATable) {
  StackedCtxKvCase c = small_stacked_case();
  const StackedCtxKvOutputs before = make_stacked_outputs(c);
  const StackedCtxKvLayer& layer0 = c.layers[0];
  const std::int64_t row_bytes = layer0.kv_size() * 2, slot_stride = layer0.k_pool.strides[0] * 2;
  const std::int64_t loc0 = c.cache_loc.load<std::int64_t>(0);

  // Token 0's K row written in layer 0, and one byte of a slot no token names.
  StackedCtxKvOutputs after = before;
  for (std::int64_t i = 0; i < row_bytes; ++i) after.k_pools[0][static_cast<std::size_t>(loc0 * slot_stride + i)] = 1;
  const auto named = [&c](std::int64_t slot) {
    for (std::int64_t t = 0; t < c.num_tokens(); ++t)
      if (c.cache_loc.load<std::int64_t>(t) == slot) return true;
    return false;
  };
  std::int64_t foreign = 0;
  while (named(foreign)) ++foreign;
  after.v_pools[1][static_cast<std::size_t>(foreign * slot_stride)] ^= 1;
  ProbeObservation o;
  observe_stacked_call(c, {}, before, &after, &o);
  ASSERT_EQ(o.writes.size(), 2u);
  EXPECT_EQ(o.writes[0].buffer, stacked_pool_buffer(0, 'K'));
  EXPECT_EQ(o.writes[0].site, WriteSite::kAddressedRecord);
  EXPECT_EQ(o.writes[0].bytes, row_bytes);
  EXPECT_EQ(o.writes[1].buffer, "layer 1 V pool");
  EXPECT_EQ(o.writes[1].what, "foreign slot");
  EXPECT_EQ(o.writes[1].slot, foreign);

  // Token 0's position past layer 0's table: its K row written is a read past the table.
  StackedCtxKvCase far = c;
  far.positions.store<std::int64_t>(0, far.layers[0].cos_sin.meta.size(0));
  ProbeObservation read;
  observe_stacked_call(far, {}, before, &after, &read);
  ASSERT_FALSE(read.bad_rows.empty());
  EXPECT_EQ(read.bad_rows[0].kind, BadRowKind::kPositionOutsideTable);
  EXPECT_EQ(read.bad_rows[0].table, "layer 0 cos_sin");
  EXPECT_TRUE(read.bad_rows[0].record_written);

  // A cache_loc past the pool: a bad row, and guard damage after the pool is attributed to it.
  StackedCtxKvCase past = c;
  const std::int64_t slots = past.layers[0].k_pool.sizes[0];
  past.cache_loc.store<std::int64_t>(1, slots);
  ProbeObservation beyond;
  observe_stacked_call(
      past, {{stacked_pool_buffer(0, 'K'), kGuardAfterRegion, slots * slot_stride, row_bytes, 0, 0x11, {}, {}}}, before,
      nullptr, &beyond);
  ASSERT_EQ(beyond.bad_rows.size(), 1u);
  EXPECT_EQ(beyond.bad_rows[0].kind, BadRowKind::kSlotPastCache);
  ASSERT_EQ(beyond.writes.size(), 1u);
  EXPECT_EQ(beyond.writes[0].site, WriteSite::kGuardZone);
  EXPECT_EQ(beyond.writes[0].row, 1);
  EXPECT_EQ(beyond.writes[0].slot, slots);
}

}  // namespace
}  // namespace kvc::testkit
