// fuzz_planted_defect_test.cpp: each metamorphic property fails on a backend with a defect of the
// kind it exists to catch, so none of them can pass vacuously.
#include <gtest/gtest.h>

#include <memory>

#include "kvc/fuzz/campaign.h"
#include "kvc/testkit/backing_diff.h"

namespace kvc::fuzz {
namespace {

// Wraps the oracle and damages its output after a successful run.
class DefectiveBackend : public testkit::Backend {
 public:
  explicit DefectiveBackend(std::function<void(const InsertCase&, InsertOutputs&)> defect) : defect_(std::move(defect)) {}
  std::string name() const override { return "defective oracle"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    const Status s = oracle_.run(c, out);
    if (s.ok()) defect_(c, out);
    return s;
  }

 private:
  testkit::OracleBackend oracle_;
  std::function<void(const InsertCase&, InsertOutputs&)> defect_;
};

bool live_slot(const InsertCase& c, std::int64_t* slot) {
  for (std::int64_t t = c.num_inserted() - 1; t >= 0; --t) {
    if (c.slots.load<std::int64_t>(t) >= 0) {
      *slot = c.slots.load<std::int64_t>(t);
      return true;
    }
  }
  return false;
}

void expect_property_fails(const char* property, DefectiveBackend& sut) {
  const PropertyOutcome o = run_property(*find_property(property), sut, RunConfig{7, 200, 30, true});
  EXPECT_FALSE(o.passed) << property << " did not notice the defect in " << o.cases << " cases";
  ASSERT_TRUE(o.failure.has_value());
  std::printf("%s caught it; shrunk to: %s\n%s\n", property, ::testing::PrintToString(o.failure->input.c.num_inserted()).c_str(),
              o.failure->message.substr(0, 600).c_str());
}

TEST(PlantedDefect, LocalityCatchesAWriteIntoPagePadding) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    const oracle::PagedCacheView v = testkit::view_of(c);
    if (c.num_inserted() > 0) out.cache[static_cast<std::size_t>(v.page_offset(v.num_blocks) - 1)] ^= 0x5A;  // last byte of the last page
  });
  expect_property_fails("locality", sut);
}

// Damages the record of whichever token comes last: its bytes depend on the batch's order and
// boundaries, which a correct insert never does.
void damage_last_live_token(const InsertCase& c, InsertOutputs& out) {
  std::int64_t slot;
  if (!live_slot(c, &slot)) return;
  out.cache[static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), slot))] ^= 0x01;
}

TEST(PlantedDefect, SplitBatchCatchesADamagedLastToken) {
  DefectiveBackend sut(damage_last_live_token);
  expect_property_fails("split-batch", sut);
}

TEST(PlantedDefect, TokenPermutationCatchesOrderDependence) {
  DefectiveBackend sut(damage_last_live_token);
  expect_property_fails("token-permutation", sut);
}

TEST(PlantedDefect, IdempotenceCatchesStateCarriedAcrossCalls) {
  auto calls = std::make_shared<int>(0);
  DefectiveBackend sut([calls](const InsertCase& c, InsertOutputs& out) {
    std::int64_t slot;
    if (!live_slot(c, &slot) || ++*calls % 2 == 0) return;  // damages every other call only
    out.cache[static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), slot))] ^= 0x01;
  });
  expect_property_fails("idempotent", sut);
}

TEST(PlantedDefect, NegationCatchesALostSign) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    std::int64_t slot;
    if (!live_slot(c, &slot) || format_of(c) == RecordFormat::kBf16_512) return;
    const std::size_t at = static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), slot));
    out.cache[at] &= 0x7F;  // drops the sign of dim 0's code
  });
  expect_property_fails("negation-flips-sign", sut);
}

TEST(PlantedDefect, ScalePropertyCatchesAFixedScale) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    const oracle::PagedCacheView v = testkit::view_of(c);
    for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
      const std::int64_t slot = c.slots.load<std::int64_t>(t);
      if (slot >= 0) out.cache[static_cast<std::size_t>(oracle::token_scale_offset(v, slot))] = 127;  // block 0 always 2^0
    }
  });
  expect_property_fails("scale-by-power-of-two", sut);
}

TEST(PlantedDefect, DequantizationBoundCatchesAnOffByOneCode) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    std::int64_t slot;
    if (!live_slot(c, &slot)) return;
    const std::size_t at = static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), slot)) + 1;
    if ((out.cache[at] & 0x7F) < 0x7D) out.cache[at] = static_cast<std::uint8_t>(out.cache[at] + 2);  // two codes up
  });
  expect_property_fails("dequantization-bound", sut);
}

}  // namespace
}  // namespace kvc::fuzz
