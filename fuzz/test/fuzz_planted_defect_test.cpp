// fuzz_planted_defect_test.cpp: every property fails on a backend (or, for decoder-total, a codec)
// with a defect of the kind it exists to catch, so none of them can pass vacuously. The last test
// checks that every property of the table has one here.
//
// differential and kv-only-equals-legacy cannot fail with the oracle as the backend under test
// (they compare the oracle with itself); the defects below show they fail on a backend that
// differs from the oracle, which is what they are for.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>

#include "testkit/backends/oracle_backend.h"
#include "kvc/fuzz/campaign.h"
#include "differential_batch.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/io/case_file.h"
#include "testkit/cases/small_cases.h"

namespace kvc::fuzz {
namespace {

// Wraps the oracle and damages its output after a successful run.
class DefectiveBackend : public testkit::Backend {
 public:
  explicit DefectiveBackend(std::function<void(const InsertCase&, InsertOutputs&)> defect)
      : defect_(std::move(defect)) {}
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
  std::printf("%s caught it; shrunk to: %s\n%s\n", property,
              ::testing::PrintToString(o.failure->input.c.num_inserted()).c_str(),
              o.failure->message.substr(0, 600).c_str());
}

TEST(PlantedDefect, LocalityCatchesAWriteIntoPagePadding) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    const oracle::PagedCacheView v = testkit::view_of(c);
    if (c.num_inserted() > 0)
      out.cache[static_cast<std::size_t>(v.page_offset(v.num_blocks) - 1)] ^= 0x5A;  // last byte of the last page
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
      if (slot >= 0)
        out.cache[static_cast<std::size_t>(oracle::token_scale_offset(v, slot))] = 127;  // block 0 always 2^0
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

TEST(PlantedDefect, DifferentialCatchesAFlippedBit) {
  DefectiveBackend sut(damage_last_live_token);
  expect_property_fails("differential", sut);
}

TEST(PlantedDefect, SlotMinusOneCatchesAWriteForASkippedRow) {
  // SGLang's store kernel does not skip negative slots (int64 truncation lands on slot 0).
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
      if (c.slots.load<std::int64_t>(t) >= 0) continue;
      out.cache[static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), 0))] = 0x5A;
      return;
    }
  });
  expect_property_fails("slot-minus-one-is-noop", sut);
}

TEST(PlantedDefect, KvOnlyEqualsLegacyCatchesALegacyOnlyKvDefect) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    if (c.op == InsertOp::kLegacy) damage_last_live_token(c, out);
  });
  expect_property_fails("kv-only-equals-legacy", sut);
}

// A backend that validates at the contract level only: every strict rule goes unchecked.
class ContractLevelOnlyBackend final : public testkit::Backend {
 public:
  std::string name() const override { return "oracle without the strict rules"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    oracle::OracleOptions options;
    options.level = ValidationLevel::kContract;
    return testkit::OracleBackend(options).run(c, out);
  }
};

// A backend that writes one byte before it validates.
class WritesBeforeValidatingBackend final : public testkit::Backend {
 public:
  std::string name() const override { return "oracle that writes before validating"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    if (!out.cache.empty()) out.cache[0] ^= 0x01;
    return oracle_.run(c, out);
  }

 private:
  testkit::OracleBackend oracle_;
};

// A backend that rejects what it should, writes nothing, but reports every rejection as kv's shape.
class WrongCodeBackend final : public testkit::Backend {
 public:
  std::string name() const override { return "oracle that reports every rejection as E102"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    const Status s = oracle_.run(c, out);
    return s.ok() ? s : Error(ErrorCode::kKvShape, "wrong code");
  }

 private:
  testkit::OracleBackend oracle_;
};

void expect_invalid_rejected_fails(testkit::Backend& sut) {
  const PropertyOutcome o = run_property(*find_property("invalid-rejected"), sut, RunConfig{7, 200, 30, true});
  EXPECT_FALSE(o.passed) << "invalid-rejected did not notice " << sut.name() << " in " << o.cases << " cases";
  ASSERT_TRUE(o.failure.has_value());
  std::printf("invalid-rejected caught %s:\n%s\n", sut.name().c_str(), o.failure->message.substr(0, 600).c_str());
}

TEST(PlantedDefect, InvalidRejectedCatchesAMissingStrictRule) {
  ContractLevelOnlyBackend sut;
  expect_invalid_rejected_fails(sut);
}

TEST(PlantedDefect, InvalidRejectedCatchesAWrongCode) {
  WrongCodeBackend sut;
  expect_invalid_rejected_fails(sut);
}

TEST(PlantedDefect, InvalidRejectedCatchesAWriteBeforeValidation) {
  WritesBeforeValidatingBackend sut;
  expect_invalid_rejected_fails(sut);
}

// decoder-total reads the codec, not a backend: the defect is a locate() that, on the first page
// of a cache with more, names the slot one page further (still inside the cache).
TEST(PlantedDefect, DecoderTotalCatchesALocateOffByOnePage) {
  CodecUnderTest codec;
  codec.locate = [](const oracle::PagedCacheView& v, std::int64_t off) {
    oracle::ByteLocation loc = oracle::locate(v, off);
    if (loc.page == 0 && loc.slot >= 0 && v.num_blocks > 1) loc.slot += v.block_size;
    return loc;
  };
  testkit::OracleBackend oracle;
  Coverage coverage;
  std::optional<FailureRecord> failure;
  PropertyContext ctx{oracle, coverage, &failure, &codec};
  const PropertySpec& p = *find_property("decoder-total");
  int failed = 0;
  for (RecordFormat f : kAllFormats) {
    const PropertyInput in{testkit::small_valid_case(InsertOp::kKvOnly, f), 5};
    failure.reset();
    try {
      p.check(in, ctx);
    } catch (...) {  // RC_FAIL outside a RapidCheck run
    }
    if (failure) {
      ++failed;
      std::printf("decoder-total caught it on %s: %s\n", std::string(layout_of(f).name).c_str(),
                  failure->message.c_str());
    }
  }
  EXPECT_EQ(failed, static_cast<int>(kAllFormats.size()));
  // And the oracle's own codec passes the same inputs.
  ctx.codec = nullptr;
  for (RecordFormat f : kAllFormats) {
    failure.reset();
    EXPECT_NO_THROW(p.check(PropertyInput{testkit::small_valid_case(InsertOp::kKvOnly, f), 5}, ctx));
    EXPECT_FALSE(failure.has_value());
  }
}

// The names of the properties that have a planted-defect test in this file. Adding a property
// without one fails here.
// Campaigns and replays take any backend: a campaign against a backend that flips one scale byte
// finds it, writes a case file, and that file fails again when replayed against the same backend
// and passes against the oracle.
TEST(PlantedDefect, CampaignAndReplayRunAgainstAnyBackend) {
  DefectiveBackend sut([](const InsertCase& c, InsertOutputs& out) {
    std::int64_t slot;
    if (!live_slot(c, &slot)) return;
    out.cache[static_cast<std::size_t>(oracle::token_data_offset(testkit::view_of(c), slot))] ^= 0x80;
  });
  const CampaignConfig config = one_differential_batch("kvc-any-backend-corpus");
  const CampaignSummary s =
      run_campaign(config, sut, [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  ASSERT_EQ(s.failure_files.size(), 1u) << "the campaign against " << sut.name() << " found nothing";
  const auto file = testkit::read_json_file(s.failure_files[0]);
  EXPECT_TRUE(replay_case_file(file, sut).has_value()) << "replay against the defective backend passed";
  testkit::OracleBackend oracle;
  EXPECT_FALSE(replay_case_file(file, oracle).has_value()) << "replay against the oracle failed";
  std::filesystem::remove_all(config.corpus_dir);
}

TEST(PlantedDefect, EveryPropertyHasOne) {
  const std::set<std::string> covered = {"differential",
                                         "slot-minus-one-is-noop",
                                         "locality",
                                         "kv-only-equals-legacy",
                                         "token-permutation",
                                         "split-batch",
                                         "idempotent",
                                         "scale-by-power-of-two",
                                         "negation-flips-sign",
                                         "dequantization-bound",
                                         "invalid-rejected",
                                         "decoder-total"};
  for (const PropertySpec& p : all_properties())
    EXPECT_TRUE(covered.count(p.name)) << "property " << p.name << " has no planted-defect test";
}

}  // namespace
}  // namespace kvc::fuzz
