// fuzz_replay_version_test.cpp: `kvconform-fuzz replay` across contract versions. A version 1
// case file whose case means something else under version 2 (bf16_512 with a NaN in a NoPE dim
// of a live row; a legacy case with q_interleaved) and a file of an unknown newer version are
// refused with exit status 2 and a message naming the change; a version 1 file whose case means
// the same replays (docs/contract.md, "Changes from version 1").
#include <gtest/gtest.h>

#include <string>

#include "kvc/fuzz/campaign.h"
#include "testkit/io/case_file.h"
#include "testkit/cases/small_cases.h"
#include "testkit/process/program_run.h"

namespace kvc::fuzz {
namespace {

// A case file as a campaign writes it, stamped with `version`.
nlohmann::json file_for(const InsertCase& c, int version) {
  nlohmann::json j;
  j["contract_version"] = version;
  j["property"] = "idempotent";
  j["seed"] = 1;
  j["aux"] = 0;
  j["mutation"] = "none";
  j["message"] = "";
  j["case"] = testkit::case_to_json(c);
  j["case"]["contract_version"] = version;
  return j;
}

using Replay = testkit::ProgramRun;

Replay replay(const nlohmann::json& file, const std::string& name) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "kvc-replay-" + name + ".json", log = dir + "kvc-replay-" + name + ".log";
  testkit::write_json_file(path, file);
  return testkit::run_program(KVC_FUZZ_BINARY, "replay '" + path + "'", log);
}

InsertCase bf16_with_nope_nan() {
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512);
  c.kv.store<std::uint16_t>(0 * kHeadDim + 9, 0x7F81);  // row 0 has a live slot
  return c;
}

InsertCase legacy_interleaved() {
  InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
  c.q_interleaved = true;
  return c;
}

TEST(ReplayVersions, Version1FileThatMeansTheSameReplays) {
  const Replay r =
      replay(file_for(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512), 1), "v1-same");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("passed"), std::string::npos) << r.output;
}

TEST(ReplayVersions, Version1Bf16NopeNanIsRefusedWithExitStatus2) {
  const Replay r = replay(file_for(bf16_with_nope_nan(), 1), "v1-nan");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("0x7FFF"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("row 0 dim 9"), std::string::npos) << r.output;
  EXPECT_THROW(replay_case_file(file_for(bf16_with_nope_nan(), 1)), std::runtime_error);
  EXPECT_EQ(replay(file_for(bf16_with_nope_nan(), 2), "v2-nan").status, 0)
      << "the same case made under version 2 replays";
}

TEST(ReplayVersions, Version1LegacyInterleavedIsRefusedWithExitStatus2) {
  const Replay r = replay(file_for(legacy_interleaved(), 1), "v1-interleaved");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("q_interleaved"), std::string::npos) << r.output;
  EXPECT_EQ(replay(file_for(legacy_interleaved(), 2), "v2-interleaved").status, 0);
}

TEST(ReplayVersions, UnknownNewerVersionIsRefusedWithExitStatus2) {
  const Replay r = replay(
      file_for(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584), kContractVersion + 1), "v3");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown to this build"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvc::fuzz
