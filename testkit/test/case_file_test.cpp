// case_file_test.cpp: case files across contract versions (docs/contract.md, "Changes from
// version 1"). A file records the version it was made under; a version 1 file replays under
// version 2 unless its case is bf16_512 with a NaN in a NoPE dim of a live row, or a legacy case
// with q_interleaved, which are refused with a message naming the change; a file of an unknown
// newer version is refused.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "testkit/cases/case_builder.h"
#include "testkit/io/case_file.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

// The message case_from_json throws, or "" when it reads the file.
std::string refusal(const nlohmann::json& j) {
  try {
    (void)testkit::case_from_json(j);
    return {};
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

nlohmann::json as_version(const InsertCase& c, int version) {
  nlohmann::json j = testkit::case_to_json(c);
  j["contract_version"] = version;
  return j;
}

// small_valid_case: 6 rows, slots for rows 0..3 with row 2's slot -1, rows 4 and 5 DP padding.
InsertCase bf16_case_with_nan_at(std::int64_t row, int dim) {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512);
  c.kv.store<std::uint16_t>(row * kHeadDim + dim, 0xFFC0);
  return c;
}

TEST(CaseFile, RoundTripsAndRecordsTheContractVersion) {
  const InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked528, 4);
  const nlohmann::json j = testkit::case_to_json(c);
  EXPECT_EQ(j.at("contract_version").get<int>(), kContractVersion);
  EXPECT_EQ(kContractVersion, 3);
  const InsertCase back = testkit::case_from_json(j);
  EXPECT_EQ(back.kv.bytes, c.kv.bytes);
  EXPECT_EQ(back.q.bytes, c.q.bytes);
  EXPECT_EQ(back.slots.bytes, c.slots.bytes);
  EXPECT_EQ(testkit::case_to_json(back), j);
}

TEST(CaseFile, Version1FilesThatMeanTheSameReplay) {
  for (RecordFormat f : kAllFormats)
    for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
      EXPECT_EQ(refusal(as_version(testkit::small_valid_case(op, f), 1)), "") << layout_of(f).name;
  EXPECT_EQ(refusal(as_version(bf16_case_with_nan_at(0, kNopeDim + 3), 1)), "")
      << "NaN in a RoPE dim: already bf() in version 1";
  EXPECT_EQ(refusal(as_version(bf16_case_with_nan_at(2, 7), 1)), "") << "NaN in a row with slot -1: never stored";
  EXPECT_EQ(refusal(as_version(bf16_case_with_nan_at(5, 7), 1)), "") << "NaN in a DP-padding row: never read";
  InsertCase packed = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  packed.kv.store<std::uint16_t>(7, 0xFFC0);
  EXPECT_EQ(refusal(as_version(packed, 1)), "") << "packed formats did not change";
}

TEST(CaseFile, Version1Bf16NopeNanIsRefusedNamingTheChange) {
  const std::string why = refusal(as_version(bf16_case_with_nan_at(3, 100), 1));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.find("version 1"), std::string::npos) << why;
  EXPECT_NE(why.find("0x7FFF"), std::string::npos) << why;
  EXPECT_NE(why.find("§3.6"), std::string::npos) << why;
  EXPECT_NE(why.find("row 3 dim 100"), std::string::npos) << why;
  EXPECT_EQ(refusal(as_version(bf16_case_with_nan_at(3, 100), 2)), "") << "the same case made under version 2 replays";
}

TEST(CaseFile, Version1LegacyInterleavedIsRefusedNamingTheChange) {
  InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
  c.q_interleaved = true;
  const std::string why = refusal(as_version(c, 1));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.find("q_interleaved"), std::string::npos) << why;
  EXPECT_NE(why.find("reads q_in interleaved"), std::string::npos) << why;
  EXPECT_NE(why.find("§4"), std::string::npos) << why;
  EXPECT_EQ(refusal(as_version(c, 2)), "");
}

TEST(CaseFile, UnknownNewerVersionIsRefused) {
  const InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  const std::string why = refusal(as_version(c, kContractVersion + 1));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.find("contract version " + std::to_string(kContractVersion + 1)), std::string::npos) << why;
  EXPECT_NE(why.find("unknown"), std::string::npos) << why;
  EXPECT_FALSE(refusal(as_version(c, 0)).empty());
}

}  // namespace
}  // namespace kvc
