// fuzz_mutation_test.cpp: campaigns must find deliberate defects in the oracle fast, and shrink
// them to a tiny case. The defect lives behind OracleOptions::mutation; the campaign runs the
// differential property with the mutant as the backend under test.
#include <gtest/gtest.h>

#include <filesystem>

#include "kvc/fuzz/campaign.h"
#include "testkit/io/case_file.h"

namespace kvc::fuzz {
namespace {

class Mutation : public ::testing::TestWithParam<oracle::OracleMutation> {};

TEST_P(Mutation, FoundWithin60SecondsAndShrunkToAtMostTwoTokens) {
  CampaignConfig config;
  config.seconds = 60;
  config.properties = {"differential"};
  config.mutation = GetParam();
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + "kvc-mutation-corpus";
  config.program = "build/default/fuzz/kvconform-fuzz";
  const CampaignSummary s = run_campaign(config, [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  ASSERT_EQ(s.failure_files.size(), 1u) << "mutant " << oracle::mutation_name(GetParam()) << " survived " << s.seconds
                                        << " s";
  std::printf("mutant %s found and shrunk in %.2f s after %lld cases\n",
              std::string(oracle::mutation_name(GetParam())).c_str(), s.first_failure_seconds,
              static_cast<long long>(s.cases));
  EXPECT_LE(s.first_failure_seconds, 60.0);

  const auto file = testkit::read_json_file(s.failure_files[0]);
  const InsertCase shrunk = testkit::case_from_json(file.at("case"));
  EXPECT_LE(shrunk.num_inserted(), 2) << "shrunk case: " << file.at("summary").get<std::string>();
  // The case file is self-contained: replaying it reproduces the failure.
  EXPECT_TRUE(replay_case_file(file).has_value());
  std::filesystem::remove_all(config.corpus_dir);
}

INSTANTIATE_TEST_SUITE_P(Oracle, Mutation,
                         ::testing::Values(oracle::OracleMutation::kScalePadOne,
                                           oracle::OracleMutation::kTiesAwayFromZero),
                         [](const ::testing::TestParamInfo<oracle::OracleMutation>& p) {
                           return p.param == oracle::OracleMutation::kScalePadOne ? std::string("ScalePadOne")
                                                                                  : std::string("TiesAwayFromZero");
                         });

TEST(Replay, PassingCaseFileReportsPass) {
  // A failure file from a mutant replays as a pass once the mutation is removed from it.
  CampaignConfig config;
  config.seconds = 30;
  config.properties = {"differential"};
  config.mutation = oracle::OracleMutation::kScalePadOne;
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + "kvc-replay-corpus";
  const CampaignSummary s = run_campaign(config, [](const std::string&) {});
  ASSERT_EQ(s.failure_files.size(), 1u);
  auto file = testkit::read_json_file(s.failure_files[0]);
  EXPECT_TRUE(replay_case_file(file).has_value());
  file["mutation"] = "none";
  EXPECT_FALSE(replay_case_file(file).has_value());
  std::filesystem::remove_all(config.corpus_dir);
}

}  // namespace
}  // namespace kvc::fuzz
