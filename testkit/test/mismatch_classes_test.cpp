// mismatch_classes_test.cpp: the mismatch classifier names every planted defect.
//
// PlantedDefectIsNamed: for every planted defect (testkit/planted_defects.h) and every format it
// can show in, a generated case is run on the oracle and on the defective backend; the outputs
// must differ (the plant did something), and every differing site must get the defect's class.
// Catches: a classifier that misses a class (e.g. never tries ties away from zero), that names a
// defect by the wrong class (a slot shift as "unexplained", a NaN policy as a RoPE pattern), or
// that calls a random bit flip something it is not.
#include <gtest/gtest.h>

#include <set>

#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/planted/planted_defects.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/test_name.h"

namespace kvc::testkit {
namespace {

struct Planted {
  PlantedDefect defect;
  RecordFormat format;
};

std::vector<Planted> planted_matrix() {
  std::vector<Planted> v;
  for (PlantedDefect d : kAllPlantedDefects)
    for (RecordFormat f : kAllFormats)
      if (planted_defect_applies(d, f)) v.push_back({d, f});
  return v;
}

std::string planted_name(const Planted& p) {
  return dashes_to_underscores(std::string(planted_defect_name(p.defect)) + "_" +
                               std::string(layout_of(p.format).name));
}

void PrintTo(const Planted& p, std::ostream* os) { *os << planted_name(p); }

class PlantedDefectIsNamed : public ::testing::TestWithParam<Planted> {};

TEST_P(PlantedDefectIsNamed, EveryDifferingSiteGetsTheDefectsClass) {
  const Planted& p = GetParam();
  const InsertCase c = planted_case(p.defect, p.format);
  const InsertOutputs initial = make_outputs(c);
  InsertOutputs expected = initial, actual = initial;
  ASSERT_TRUE(OracleBackend().run(c, expected).ok());
  DefectBackend planted(p.defect);
  ASSERT_TRUE(planted.run(c, actual).ok());
  ASSERT_NE(expected.cache, actual.cache) << planted.name() << " wrote the oracle's bytes: the plant is vacuous here";

  const MismatchClassification m =
      classify_insert_mismatches(c, kvc::vllm_profile(), initial.cache, expected.cache, actual.cache);
  const MismatchClass want = expected_class(p.defect);
  std::printf("%s on %s:\n%s", planted.name().c_str(), std::string(layout_of(p.format).name).c_str(),
              m.report().c_str());
  EXPECT_GT(m.count(want), 0) << "no site classified as " << mismatch_class_name(want) << "\n" << m.report();
  EXPECT_EQ(m.count(want), m.total_sites())
      << "every site must be " << mismatch_class_name(want) << ", got: " << m.summary_line() << "\n"
      << m.report();
  EXPECT_EQ(m.not_searched, 0);
  EXPECT_NE(m.report().find(std::string(mismatch_class_name(want))), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Defects, PlantedDefectIsNamed, ::testing::ValuesIn(planted_matrix()),
                         [](const ::testing::TestParamInfo<Planted>& i) { return planted_name(i.param); });

TEST(MismatchClasses, EveryClassHasAPlantedDefect) {
  std::set<MismatchClass> planted;
  for (const Planted& p : planted_matrix()) planted.insert(expected_class(p.defect));
  for (MismatchClass c : kAllMismatchClasses)
    EXPECT_TRUE(planted.count(c)) << "no planted defect shows class " << mismatch_class_name(c);
}

TEST(MismatchClasses, EqualBackingsHaveNoSites) {
  const InsertCase c = small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  InsertOutputs expected = make_outputs(c);
  const InsertOutputs initial = expected;
  ASSERT_TRUE(OracleBackend().run(c, expected).ok());
  const MismatchClassification m =
      classify_insert_mismatches(c, kvc::vllm_profile(), initial.cache, expected.cache, expected.cache);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.summary_line(), "none");
}

// The legacy op's KV side is classified like the KV-only op's.
TEST(MismatchClasses, LegacyCaseKvSideTiesAreNamed) {
  const InsertCase c = small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked528, 3);
  const InsertOutputs initial = make_outputs(c);
  InsertOutputs expected = initial, actual = initial;
  ASSERT_TRUE(OracleBackend().run(c, expected).ok());
  oracle::OracleOptions mutant;
  mutant.mutation = oracle::OracleMutation::kTiesAwayFromZero;
  ASSERT_TRUE(OracleBackend(mutant).run(c, actual).ok());
  ASSERT_NE(expected.cache, actual.cache);
  const MismatchClassification m =
      classify_insert_mismatches(c, kvc::vllm_profile(), initial.cache, expected.cache, actual.cache);
  EXPECT_EQ(m.count(MismatchClass::kRoundingTie), m.total_sites()) << m.report();
}

// A site named under a profile the backend declares is judged against that profile: the same
// SGLang clamp order declared honestly leaves nothing to classify.
TEST(MismatchClasses, DeclaredProfileIsTheBaseline) {
  const InsertCase c = planted_case(PlantedDefect::kClampOrderSglang, RecordFormat::kPacked584);
  const InsertOutputs initial = make_outputs(c);
  InsertOutputs actual = initial;
  ASSERT_TRUE(DefectBackend(PlantedDefect::kClampOrderSglang).run(c, actual).ok());
  const kvc::Profile sglang_clamp = kvc::with_alternative(kvc::vllm_profile(), kvc::Policy::kClampOrder, 1);
  oracle::OracleOptions o;
  o.profile = sglang_clamp;
  InsertOutputs expected = initial;
  ASSERT_TRUE(OracleBackend(o).run(c, expected).ok());
  EXPECT_TRUE(classify_insert_mismatches(c, sglang_clamp, initial.cache, expected.cache, actual.cache).empty());
}

TEST(MismatchClasses, JsonAndMergeCountEverySite) {
  MismatchClassification a, b;
  ClassifiedSite s;
  s.cls = MismatchClass::kPadByte;
  s.bytes = 1;
  s.where = "pad byte of slot 3";
  s.detail = "written 0x01 instead of 0x00";
  for (int i = 0; i < 5; ++i) a.add(s);
  s.cls = MismatchClass::kUntouchedRegion;
  s.bytes = 16;
  b.add(s);
  a.merge(b);
  EXPECT_EQ(a.total_sites(), 6);
  EXPECT_EQ(a.shown.at(MismatchClass::kPadByte).size(), MismatchClassification::kShownPerClass);
  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j.at("sites").at("pad_byte").get<int>(), 5);
  EXPECT_EQ(j.at("bytes").at("untouched_region").get<int>(), 16);
  EXPECT_EQ(j.at("examples").at("pad_byte").size(), MismatchClassification::kShownPerClass);
  EXPECT_NE(a.report().find("    ...\n"), std::string::npos) << "more sites than shown must say so";
}

}  // namespace
}  // namespace kvc::testkit
