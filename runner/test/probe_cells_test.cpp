// probe_cells_test.cpp: the calls `kvconform probe` sends, and its report.
//
// Catches: a rule of the insert, store or stacked matrix the probe never sends (or sends twice
// under one name, so that probe-one would run another cell than the parent asked for); a harness
// rule or metadata a DLTensor cannot carry sent to a library anyway (the harness cannot even
// build the call); a value rule left out as "not sent" (the ones the probe exists for); a breaker
// that leaves out a required tensor expected with its rule's code instead of 403; the fused
// kv_norm cells filed under the plain insert; a seed that does not reach the cases; a report
// without every class in its summary, or without the "not declared enforced" mark; a stacked cell
// the device harness itself refuses (a pool view it cannot check) sent anyway.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kvc/kernel_abi.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "probe_cells.h"
#include "probe_report.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"
#include "testkit/cases/store_cases.h"

namespace kvc::runner {
namespace {

const std::vector<ProbeCell>& cells() {
  static const std::vector<ProbeCell> all = probe_cells(1);
  return all;
}

const ProbeCell& cell(const std::string& name) {
  for (const ProbeCell& c : cells())
    if (c.name == name) return c;
  throw std::invalid_argument("no cell " + name);
}

TEST(ProbeCells, EveryMatrixCellOnceUnderAUniqueName) {
  EXPECT_EQ(cells().size(), testkit::rule_matrix().size() + testkit::store_rule_matrix().size() +
                                testkit::stacked_rule_breakers().size());
  std::set<std::string> names;
  std::map<ProbeFamily, int> families;
  for (const ProbeCell& c : cells()) {
    EXPECT_TRUE(names.insert(c.name).second) << "two cells named " << c.name;
    ++families[c.family];
    EXPECT_FALSE(c.right_codes.empty()) << c.name;
  }
  EXPECT_EQ(families.size(), 3u);
  for (const testkit::RuleMatrixEntry& e : testkit::rule_matrix())
    EXPECT_TRUE(names.count(testkit::rule_matrix_name(e)));
  for (const testkit::StoreRuleCell& e : testkit::store_rule_matrix())
    EXPECT_TRUE(names.count(testkit::store_rule_cell_name(e)));
  for (const testkit::StackedRuleBreaker& b : testkit::stacked_rule_breakers())
    EXPECT_TRUE(names.count("Stacked_" + b.name));
}

TEST(ProbeCells, HarnessRulesAndInexpressibleMetadataAreNotSentValueRulesAre) {
  for (const char* name : {"BackingTooSmall_KvOnly_Packed584", "KvBytesTruncated_Legacy_Bf16_512",
                           "BackingShort_packed584_PagedView", "Stacked_KPoolBufferOneByteShort"})
    EXPECT_NE(cell(name).not_sent.find("harness rule"), std::string::npos) << name << ": " << cell(name).not_sent;
  for (const char* name : {"UnknownOpCode_KvOnly_Fp8_512", "KvStridesLongerThanSizes_KvOnly_Packed584",
                           "QOutNegativeOffset_Legacy_Packed528", "Stacked_XStridesOfAnotherRank"})
    EXPECT_NE(cell(name).not_sent.find("DLTensor"), std::string::npos) << name << ": " << cell(name).not_sent;
  for (const char* name :
       {"SlotBeyondTheCache_KvOnly_Packed584", "PositionAtMaxPos_Legacy_Bf16_512", "DuplicateSlot_KvOnly_Fp8_512",
        "Fp8ScaleNaN_KvOnly_Fp8_512", "KvFloat32_KvOnly_Packed528", "IndexAtCapacity_packed528_SglangFlat",
        "Stacked_CacheLocBeyondPool", "Stacked_PositionBeyondTable", "KvMissing_KvOnly_Packed584"})
    EXPECT_EQ(cell(name).not_sent, "") << name;
}

// The device harness refuses, before any call, a pool view it cannot check (an odd byte offset on
// fp16 pools): such a cell sent anyway ended its probe-one process and was reported CRASHED for
// every library.
TEST(ProbeCells, EveryStackedCellSentPassesTheHarnesssOwnPoolCheck) {
  EXPECT_NE(cell("Stacked_KPoolOffsetOddBytes").not_sent.find("the harness does not hand over"), std::string::npos)
      << cell("Stacked_KPoolOffsetOddBytes").not_sent;
  int sent = 0;
  for (const ProbeCell& c : cells()) {
    if (c.family != ProbeFamily::kStacked || !c.not_sent.empty()) continue;
    const StackedCall& call = std::get<StackedCall>(c.call);
    EXPECT_TRUE(validate_stacked_ctx_kv_outputs(call.c, call.out).ok()) << c.name;
    ++sent;
  }
  EXPECT_GT(sent, 10);
}

TEST(ProbeCells, RightCodesOpsAndFormats) {
  EXPECT_EQ(cell("KvFloat32_KvOnly_Packed584").right_codes, std::vector<int>{static_cast<int>(ErrorCode::kKvDtype)});
  EXPECT_EQ(cell("KvMissing_KvOnly_Packed584").right_codes, std::vector<int>{KVC_STATUS_BAD_ARGUMENT});
  EXPECT_EQ(cell("RowsMissing_packed584_PagedView").right_codes, std::vector<int>{KVC_STATUS_BAD_ARGUMENT});
  EXPECT_EQ(cell("Stacked_XMissing").right_codes, std::vector<int>{KVC_STATUS_BAD_ARGUMENT});
  EXPECT_EQ(cell("Stacked_XFloat32").right_codes, std::vector<int>{static_cast<int>(ErrorCode::kStackedXDtype)});
  EXPECT_EQ(cell("NormWeightOf256_KvOnly_Packed584").op, AbiOp::kKvOnlyKvNorm);
  EXPECT_EQ(cell("SlotBeyondTheCache_KvOnly_Packed584").op, AbiOp::kKvOnly);
  EXPECT_EQ(cell("SlotBeyondTheCache_Legacy_Fp8_512").op, AbiOp::kLegacy);
  EXPECT_EQ(cell("IndexAtCapacity_packed584_PagedView").op, AbiOp::kStoreRotated);
  EXPECT_EQ(cell("IndexAtCapacity_packed584_PagedView").format, "packed584/PagedView");
  EXPECT_EQ(cell("Stacked_CacheLocBeyondPool").op, AbiOp::kStackedCtxKv);
  EXPECT_EQ(cell("Stacked_CacheLocBeyondPool").format, "-");
}

TEST(ProbeCells, TheSeedReachesTheCases) {
  const std::vector<ProbeCell> other = probe_cells(2);
  const auto kv = [](const std::vector<ProbeCell>& all) {
    for (const ProbeCell& c : all)
      if (c.name == "SlotBeyondTheCache_KvOnly_Packed584") return std::get<InsertCall>(c.call).c.kv.bytes;
    return std::vector<std::uint8_t>{};
  };
  EXPECT_FALSE(kv(cells()).empty());
  EXPECT_NE(kv(cells()), kv(other));
}

TEST(ProbeReport, LinesSummaryAndJson) {
  ProbeReport report;
  report.library = "lib";
  report.device = "dev";
  report.not_probed = {"kvc_store_rotated is not exported: 60 store calls not sent"};
  ProbeRow row;
  row.cell = "SlotBeyondTheCache_KvOnly_Packed584";
  row.rule = "SlotBeyondTheCache";
  row.right_codes = {static_cast<int>(ErrorCode::kSlotOutOfRange)};
  row.verdict = {testkit::ProbeClass::kWroteOutOfBounds, "kv_cache (backing) guard after +9728, 328 bytes"};
  row.declared_enforced = false;
  row.status = 0;
  report.rows.push_back(row);
  row.cell = "BackingTooSmall_KvOnly_Packed584";
  row.verdict = {testkit::ProbeClass::kNotSent, "harness rule"};
  row.declared_enforced = true;
  row.status.reset();
  report.rows.push_back(row);

  const std::string line = probe_row_line(report.rows[0]);
  EXPECT_NE(line.find("WROTE OUT OF BOUNDS [not declared enforced]"), std::string::npos) << line;
  EXPECT_NE(line.find("guard after +9728"), std::string::npos) << line;
  EXPECT_EQ(probe_row_line(report.rows[1]).find("not declared enforced"), std::string::npos);

  const std::string summary = probe_summary(report);
  for (testkit::ProbeClass c : testkit::kAllProbeClasses)
    EXPECT_NE(summary.find(std::string(testkit::probe_class_text(c))), std::string::npos) << summary;
  EXPECT_NE(summary.find("not probed: kvc_store_rotated is not exported"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("PASSED"), std::string::npos) << "the probe reports, it does not judge";

  const nlohmann::json j = probe_to_json(report);
  EXPECT_EQ(j.at("calls").size(), 2u);
  EXPECT_EQ(j.at("calls")[0].at("class"), "wrote_out_of_bounds");
  EXPECT_FALSE(j.at("calls")[0].at("declared_enforced").get<bool>());
  EXPECT_EQ(j.at("calls")[0].at("status"), 0);
  EXPECT_TRUE(j.at("calls")[1].at("status").is_null());
  EXPECT_EQ(j.at("summary").size(), testkit::kAllProbeClasses.size());
  EXPECT_EQ(j.at("summary").at("not_sent"), 1);
  EXPECT_EQ(j.at("summary").at("crashed"), 0);
}

}  // namespace
}  // namespace kvc::runner
