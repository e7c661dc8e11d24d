// backing_diff_test.cpp: the comparator catches and explains a single planted byte in every field
// class; equal backings compare equal.
#include <gtest/gtest.h>

#include "kvc/oracle/record_codec.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

struct Planted {
  testkit::ByteClass cls;  // expected mismatch class
  std::int64_t offset;     // where the byte is flipped
  std::vector<std::string> report_mentions;
};

struct Fixture {
  InsertCase c;
  InsertOutputs out;
  oracle::PagedCacheView view;
  std::int64_t live_slot = -1, foreign_slot = -1;
};

Fixture run_small(RecordFormat f) {
  Fixture fx{testkit::small_valid_case(InsertOp::kKvOnly, f), {}, {}};
  fx.out = testkit::make_outputs(fx.c);
  EXPECT_TRUE(testkit::OracleBackend().run(fx.c, fx.out).ok());
  fx.view = testkit::view_of(fx.c);
  const auto addressed = testkit::addressed_slots(fx.c);
  fx.live_slot = *addressed.begin();
  for (std::int64_t s = 0; s < fx.view.capacity(); ++s)
    if (!addressed.count(s)) {
      fx.foreign_slot = s;
      break;
    }
  return fx;
}

void expect_caught(const Fixture& fx, const Planted& p) {
  SCOPED_TRACE(std::string("planted ") + std::string(testkit::name(p.cls)) + " at offset " + std::to_string(p.offset));
  std::vector<std::uint8_t> actual = fx.out.cache;
  actual[static_cast<std::size_t>(p.offset)] ^= 0x01;
  const testkit::DiffReport r = testkit::diff_case_backings(fx.c, fx.out.cache, actual);
  ASSERT_EQ(r.mismatch_count, 1);
  ASSERT_EQ(r.first.size(), 1u);
  EXPECT_EQ(r.first[0].offset, p.offset);
  EXPECT_EQ(testkit::mismatch_class(r.first[0]), p.cls);
  EXPECT_EQ(r.count_by_class.at(p.cls), 1);
  testkit::ReportContext ctx;
  ctx.reproduce = "ctest -R BackingDiff";
  const std::string text = testkit::format_case_report(fx.c, r, fx.out.cache, actual, ctx);
  char bytes[48];
  std::snprintf(bytes, sizeof bytes, "expected 0x%02x actual 0x%02x", fx.out.cache[p.offset], actual[p.offset]);
  EXPECT_NE(text.find(bytes), std::string::npos) << text;
  EXPECT_NE(text.find("reproduce: ctest -R BackingDiff"), std::string::npos) << text;
  for (const std::string& m : p.report_mentions)
    EXPECT_NE(text.find(m), std::string::npos) << "missing '" << m << "' in\n" << text;
}

TEST(BackingDiff, EqualBackingsCompareEqual) {
  const Fixture fx = run_small(RecordFormat::kPacked584);
  const testkit::DiffReport r = testkit::diff_case_backings(fx.c, fx.out.cache, fx.out.cache);
  EXPECT_TRUE(r.equal());
  EXPECT_EQ(r.compared_bytes, static_cast<std::int64_t>(fx.out.cache.size()));
}

TEST(BackingDiff, SizeDifferenceIsAMismatch) {
  const Fixture fx = run_small(RecordFormat::kPacked584);
  std::vector<std::uint8_t> shorter(fx.out.cache.begin(), fx.out.cache.end() - 1);
  EXPECT_FALSE(testkit::diff_case_backings(fx.c, fx.out.cache, shorter).equal());
}

TEST(BackingDiff, CatchesEveryPackedFieldClass) {
  const Fixture fx = run_small(RecordFormat::kPacked584);
  const std::int64_t data = oracle::token_data_offset(fx.view, fx.live_slot);
  const std::int64_t scales = oracle::token_scale_offset(fx.view, fx.live_slot);
  const std::string slot = "(slot " + std::to_string(fx.live_slot) + ")";
  const std::string page = "page " + std::to_string(fx.live_slot / fx.view.block_size);
  expect_caught(fx, {testkit::ByteClass::kFp8Code, data + 70, {slot, page, "dim 70", "block 1", "fp8 0x"}});
  expect_caught(fx, {testkit::ByteClass::kValue16, data + 448 + 2 * 5 + 1, {slot, "dim 453", "high byte", "bf16 0x"}});
  expect_caught(fx, {testkit::ByteClass::kScale, scales + 3, {slot, "block 3", "scale 0x"}});
  expect_caught(fx, {testkit::ByteClass::kScalePad, scales + 7, {slot, "pad 0x01 (contract: 0x00)"}});
  expect_caught(fx, {testkit::ByteClass::kPagePadding,
                     fx.view.page_offset(1) + 584 * fx.view.block_size + 3,
                     {"page 1", "page padding"}});
  expect_caught(fx, {testkit::ByteClass::kForeignSlot,
                     oracle::token_data_offset(fx.view, fx.foreign_slot) + 2,
                     {"FOREIGN SLOT", "(slot " + std::to_string(fx.foreign_slot) + ")"}});
  expect_caught(
      fx, {testkit::ByteClass::kOutsideCache, static_cast<std::int64_t>(fx.out.cache.size()) - 1, {"guard zone"}});
}

TEST(BackingDiff, CatchesFullCacheRowGapAndValues) {
  const Fixture fx = run_small(RecordFormat::kBf16_512);
  const std::int64_t row = oracle::token_data_offset(fx.view, fx.live_slot);
  expect_caught(fx, {testkit::ByteClass::kValue16, row + 2 * 100, {"dim 100", "low byte", "bf16 0x"}});
  expect_caught(fx, {testkit::ByteClass::kRowGap, row + 1024 + 3, {"row gap"}});
  const Fixture f8 = run_small(RecordFormat::kFp8_512);
  expect_caught(f8, {testkit::ByteClass::kFp8Code,
                     oracle::token_data_offset(f8.view, f8.live_slot) + 9,
                     {"dim 9", " x 0.699999988"}});
}

TEST(BackingDiff, ReportIsBoundedFirstAndLast) {
  const Fixture fx = run_small(RecordFormat::kPacked528);
  std::vector<std::uint8_t> actual = fx.out.cache;
  for (std::size_t i = 0; i < 40; ++i) actual[i * 3] ^= 0xFF;
  const testkit::DiffReport r = testkit::diff_case_backings(fx.c, fx.out.cache, actual);
  EXPECT_EQ(r.mismatch_count, 40);
  EXPECT_EQ(r.first.size(), testkit::DiffReport::kShown);
  EXPECT_EQ(r.last.size(), testkit::DiffReport::kShown);
  EXPECT_EQ(r.first.front().offset, 0);
  EXPECT_EQ(r.last.back().offset, 39 * 3);
  const std::string text = testkit::format_case_report(fx.c, r, fx.out.cache, actual, {});
  EXPECT_NE(text.find("40 mismatching bytes"), std::string::npos);
  EXPECT_NE(text.find("  ...\n"), std::string::npos);
}

}  // namespace
}  // namespace kvc
