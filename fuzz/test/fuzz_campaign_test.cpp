// fuzz_campaign_test.cpp: campaigns rotate over every property and report what they did not cover.
//
// Rotation: under a short budget (an injected clock that advances with every backend call, so the
// test is fast and deterministic) every property gets cases, where the old schedule (one batch of
// 100 cases per property in turn) reached only the first properties; that old schedule is run too
// and must be reported as coverage gaps. A cheap property still missing a class catches up with
// larger batches. Coverage gaps: a property that always discards, a backend
// that implements no legacy op, a case budget too small for the property count, and a tracked
// class never generated each make a COVERAGE GAP and exit status 3, never a pass. Token limits:
// --max-tokens and the legacy limit bound the generated problems (a planted property fails above
// them and is shrunk to exactly one token past the limit). A backend exception is a failure that
// shrinks and replays. Summaries survive JSON and merge across segments. The CLI parses
// --backend, refuses unknown values and a device backend it cannot have, with exit status 2.
#include <gtest/gtest.h>

#include <rapidcheck.h>

#include <algorithm>
#include <filesystem>

#include "testkit/backends/oracle_backend.h"
#include "kvc/fuzz/backend_choice.h"
#include "kvc/fuzz/campaign.h"
#include "testkit/io/case_file.h"
#include "testkit/process/program_run.h"

namespace kvc::fuzz {
namespace {

// The oracle, where every run costs `cost` seconds of an injected clock.
class TimedOracle final : public testkit::Backend {
 public:
  explicit TimedOracle(double cost) : cost_(cost) {}
  std::string name() const override { return "oracle (timed)"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    now += cost_;
    return oracle_.run(c, out);
  }
  double now = 0.0;

 private:
  double cost_;
  testkit::OracleBackend oracle_;
};

void print(const std::string& line) { std::printf("%s\n", line.c_str()); }

const PropertyStats& stats_of(const CampaignSummary& s, const std::string& name) {
  for (const PropertyStats& p : s.properties)
    if (p.name == name) return p;
  throw std::runtime_error("no property " + name + " in the summary");
}

bool has_gap(const CampaignSummary& s, const std::string& text) {
  const auto gaps = s.coverage_gaps();
  return std::any_of(gaps.begin(), gaps.end(), [&](const std::string& g) { return g == text; });
}

CampaignConfig short_campaign(TimedOracle& sut) {
  CampaignConfig config;
  config.seconds = 60;  // of the injected clock: 240 backend calls at 0.25 s
  config.max_size = 20;
  config.clock = [&sut] { return sut.now; };
  config.corpus_dir = ::testing::TempDir() + "kvc-campaign-corpus";
  return config;
}

TEST(CampaignRotation, EveryPropertyGetsCasesUnderAShortBudget) {
  TimedOracle sut(0.25);
  const CampaignSummary s = run_campaign(short_campaign(sut), sut, print);
  std::printf("%s", format_summary(s).c_str());
  ASSERT_EQ(s.properties.size(), all_properties().size());
  EXPECT_TRUE(s.properties_without_cases().empty())
      << "properties without a case: " << ::testing::PrintToString(s.properties_without_cases());
  EXPECT_TRUE(s.failure_files.empty());
  EXPECT_GE(s.rounds, kMinimumRounds) << "the budget was not spread over several rounds";
  // The budget holds: the last batch starts before the deadline and is sized to end by it.
  EXPECT_LE(s.seconds, 60.0 + 10 * 3 * 0.25);
  for (const PropertyStats& p : s.properties) {
    std::printf("%-24s %lld cases in %d batches\n", p.name.c_str(), static_cast<long long>(p.cases), p.runs);
    EXPECT_GE(p.runs, kMinimumRounds) << p.name << " was not rotated through every round";
  }
}

// Anti-vacuity of the test above: the old schedule (fixed batches of 100, property after
// property) under the same budget reaches only the first properties, and the summary says so.
TEST(CampaignRotation, TheOldScheduleLeavesPropertiesWithoutCasesAndSaysSo) {
  TimedOracle sut(0.25);
  CampaignConfig config = short_campaign(sut);
  config.batch_cases = 100;
  config.adaptive = false;
  const CampaignSummary s = run_campaign(config, sut, print);
  std::printf("%s", format_summary(s).c_str());
  EXPECT_GE(s.properties_without_cases().size(), 8u);
  EXPECT_TRUE(has_gap(s, "token-permutation: no case ran"));
  EXPECT_EQ(s.exit_code(), kExitCoverageGap);
}

// A cheap property still missing a tracked class takes larger batches (up to kCatchUpFactor times)
// after its first; one whose classes are all hit keeps the configured size.
TEST(CampaignRotation, APropertyMissingClassesCatchesUpWithLargerBatches) {
  PropertySpec missing = *find_property("decoder-total");  // cheap: never runs the backend
  missing.name = "missing-a-class";
  missing.generation.packed_only = true;
  missing.required_classes = {"format:bf16_512"};  // never generated
  PropertySpec covered = *find_property("decoder-total");
  CampaignConfig config;
  config.seconds = 600;
  config.max_rounds = 2;
  config.max_size = 5;
  config.property_table = {missing, covered};
  const CampaignSummary s = run_campaign(config, print);
  EXPECT_EQ(stats_of(s, "decoder-total").cases, 2 * config.batch_cases);
  EXPECT_EQ(stats_of(s, "missing-a-class").cases, config.batch_cases + kCatchUpFactor * config.batch_cases);
  EXPECT_TRUE(has_gap(s, "missing-a-class: class format:bf16_512 never generated"));
}

TEST(CoverageGap, ReportedForAPropertyThatAlwaysDiscards) {
  CampaignConfig config;
  config.max_rounds = 2;
  config.batch_cases = 5;
  config.max_size = 10;
  config.property_table = {*find_property("idempotent")};
  PropertySpec discarding = *find_property("idempotent");
  discarding.name = "always-discards";
  discarding.check = [](const PropertyInput&, PropertyContext&) { RC_DISCARD("planted: never applicable"); };
  config.property_table.push_back(discarding);
  const CampaignSummary s = run_campaign(config, print);
  std::printf("%s", format_summary(s).c_str());
  EXPECT_GT(stats_of(s, "idempotent").cases, 0);
  EXPECT_EQ(stats_of(s, "always-discards").cases, 0);
  EXPECT_GT(stats_of(s, "always-discards").discarded, 0);
  EXPECT_EQ(s.properties_without_cases(), std::vector<std::string>{"always-discards"});
  EXPECT_TRUE(s.failure_files.empty()) << "giving up is a gap, not a failure";
  EXPECT_EQ(s.exit_code(), kExitCoverageGap);
  EXPECT_NE(format_summary(s).find("COVERAGE GAP always-discards: no case ran"), std::string::npos);
}

// A kernel library without the legacy op: its cases are discarded (never passed), so the property
// that runs every problem through the legacy op gets no case and is a gap.
class NoLegacyOracle final : public testkit::Backend {
 public:
  std::string name() const override { return "oracle without the legacy op"; }
  testkit::Support supports(const InsertCase& c) const override {
    if (c.op == InsertOp::kLegacy) return {false, "no legacy op"};
    return {};
  }
  Status run(const InsertCase& c, InsertOutputs& out) override { return oracle_.run(c, out); }

 private:
  testkit::OracleBackend oracle_;
};

// One round of `batch_cases` cases of each of `properties`, problems of size up to 10.
CampaignConfig one_small_round(int batch_cases, std::vector<std::string> properties) {
  CampaignConfig config;
  config.max_rounds = 1;
  config.batch_cases = batch_cases;
  config.max_size = 10;
  config.properties = std::move(properties);
  return config;
}

TEST(CoverageGap, ReportedForAPropertyTheBackendCannotRun) {
  const CampaignConfig config = one_small_round(5, {"kv-only-equals-legacy", "token-permutation"});
  NoLegacyOracle sut;
  const CampaignSummary s = run_campaign(config, sut, print);
  std::printf("%s", format_summary(s).c_str());
  EXPECT_EQ(s.properties_without_cases(), std::vector<std::string>{"kv-only-equals-legacy"});
  EXPECT_GT(stats_of(s, "token-permutation").cases, 0);
  EXPECT_EQ(s.exit_code(), kExitCoverageGap);
}

TEST(CoverageGap, ReportedWhenTheCaseBudgetIsTooSmall) {
  CampaignConfig config;
  config.max_cases = 25;  // 10 + 10 + 5: three properties of twelve
  config.batch_cases = 10;
  config.max_size = 10;
  const CampaignSummary s = run_campaign(config, print);
  EXPECT_EQ(s.cases, 25);
  EXPECT_EQ(s.properties_without_cases().size(), all_properties().size() - 3);
  EXPECT_TRUE(has_gap(s, "decoder-total: no case ran"));
  EXPECT_EQ(s.exit_code(), kExitCoverageGap);
}

TEST(CoverageGap, ReportedForATrackedClassNeverGenerated) {
  PropertySpec p = *find_property("idempotent");
  p.generation.packed_only = true;
  p.required_classes = {"format:packed584", "format:bf16_512"};
  CampaignConfig config;
  config.max_rounds = 2;
  config.max_size = 10;
  config.property_table = {p};
  const CampaignSummary s = run_campaign(config, print);
  EXPECT_TRUE(s.properties_without_cases().empty());
  EXPECT_TRUE(has_gap(s, "idempotent: class format:bf16_512 never generated"));
  EXPECT_FALSE(has_gap(s, "idempotent: class format:packed584 never generated"));
  EXPECT_EQ(s.exit_code(), kExitCoverageGap);
}

// Fails on any problem with more tokens than `kv_limit` (KV-only) or `legacy_limit` (legacy).
PropertySpec token_bound(std::int64_t kv_limit, std::int64_t legacy_limit) {
  PropertySpec p = *find_property("idempotent");  // any op and format
  p.name = "token-bound";
  p.required_classes = {"op:legacy"};
  p.check = [kv_limit, legacy_limit](const PropertyInput& in, PropertyContext& ctx) {
    const std::int64_t limit = in.c.op == InsertOp::kLegacy ? legacy_limit : kv_limit;
    if (in.c.num_inserted() > limit) {
      *ctx.last_failure = FailureRecord{in, std::to_string(in.c.num_inserted()) + " tokens"};
      RC_FAIL("too many tokens");
    }
  };
  return p;
}

TEST(CampaignTokens, MaxTokensAndTheLegacyLimitBoundTheProblems) {
  CampaignConfig config;
  config.property_table = {token_bound(40, 6)};
  config.max_rounds = 3;
  config.batch_cases = 40;
  config.max_tokens = 40;
  config.max_legacy_tokens = 6;
  config.corpus_dir = ::testing::TempDir() + "kvc-token-corpus";
  const CampaignSummary within = run_campaign(config, print);
  EXPECT_TRUE(within.failure_files.empty()) << "a problem exceeded the limits";
  EXPECT_EQ(within.exit_code(), kExitPassed) << format_summary(within);

  // Without the legacy limit a legacy problem exceeds 6 tokens, and shrinks to exactly 7.
  config.max_legacy_tokens = 0;
  config.stop_on_failure = true;
  const CampaignSummary over = run_campaign(config, print);
  ASSERT_EQ(over.failure_files.size(), 1u);
  const auto file = testkit::read_json_file(over.failure_files[0]);
  const InsertCase shrunk = testkit::case_from_json(file.at("case"));
  EXPECT_EQ(shrunk.op, InsertOp::kLegacy);
  EXPECT_EQ(shrunk.num_inserted(), 7) << file.at("summary").get<std::string>();
  EXPECT_EQ(over.exit_code(), kExitFailure);
  std::filesystem::remove_all(config.corpus_dir);
}

TEST(CampaignTokens, GenerationForKeepsTheSmallerRuleBreakingLimit) {
  const GenConfig invalid = generation_for(*find_property("invalid-rejected"), kDeviceMaxTokens, 0);
  EXPECT_EQ(invalid.max_tokens, find_property("invalid-rejected")->generation.max_tokens);
  const GenConfig diff = generation_for(*find_property("differential"), kDeviceMaxTokens, kDeviceMaxLegacyTokens);
  EXPECT_EQ(diff.max_tokens, kDeviceMaxTokens);
  EXPECT_EQ(diff.max_legacy_tokens, kDeviceMaxLegacyTokens);
  EXPECT_EQ(generation_for(*find_property("differential"), 0, 0).max_tokens, 4096);
  EXPECT_TRUE(find_property("kv-only-equals-legacy")->generation.legacy_sized)
      << "kv-only-equals-legacy runs every problem as legacy: its problems must obey the legacy limit";
}

// A backend that throws (as the device backend does on damaged device memory) on any live
// packed584 row: a failure with a recorded, shrunk input and a case file that replays.
class ThrowingBackend final : public testkit::Backend {
 public:
  std::string name() const override { return "throwing oracle"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    if (format_of(c) == RecordFormat::kPacked584)
      for (std::int64_t t = 0; t < c.num_inserted(); ++t)
        if (c.slots.load<std::int64_t>(t) >= 0) throw std::runtime_error("planted: guard zone damaged");
    return oracle_.run(c, out);
  }

 private:
  testkit::OracleBackend oracle_;
};

TEST(CampaignFailures, ABackendExceptionIsAShrunkReplayableFailure) {
  ThrowingBackend sut;
  CampaignConfig config;
  config.properties = {"differential"};
  config.max_rounds = 5;
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + "kvc-throwing-corpus";
  const CampaignSummary s = run_campaign(config, sut, print);
  ASSERT_EQ(s.failure_files.size(), 1u);
  const auto file = testkit::read_json_file(s.failure_files[0]);
  EXPECT_NE(file.at("message").get<std::string>().find("planted: guard zone damaged"), std::string::npos);
  EXPECT_EQ(testkit::case_from_json(file.at("case")).num_inserted(), 1) << file.at("summary").get<std::string>();
  EXPECT_TRUE(replay_case_file(file, sut).has_value());
  EXPECT_FALSE(replay_case_file(file).has_value()) << "the case passes on the oracle";
  std::filesystem::remove_all(config.corpus_dir);
}

TEST(CampaignSummaries, SurviveJsonAndMergeAcrossSegments) {
  CampaignConfig config = one_small_round(3, {"idempotent", "decoder-total"});
  const CampaignSummary a = run_campaign(config, print);
  config.first_seed = a.last_seed + 1;
  const CampaignSummary b = run_campaign(config, print);
  const CampaignSummary a2 = CampaignSummary::from_json(a.to_json());
  EXPECT_EQ(a2.to_json(), a.to_json());
  EXPECT_EQ(a.to_json().at("properties").size(), 2u);

  const CampaignSummary m = merge_summaries({a, b});
  EXPECT_EQ(m.segments, 2);
  EXPECT_EQ(m.cases, a.cases + b.cases);
  EXPECT_EQ(m.first_seed, 1u);
  EXPECT_EQ(m.last_seed, 2u);
  EXPECT_EQ(stats_of(m, "idempotent").cases, stats_of(a, "idempotent").cases + stats_of(b, "idempotent").cases);
  for (const auto& [cls, n] : stats_of(a, "idempotent").class_hits)
    EXPECT_GE(stats_of(m, "idempotent").class_hits.at(cls), n);
  CampaignSummary other = b;
  other.backend = "device:something else";
  EXPECT_THROW(merge_summaries({a, other}), std::runtime_error);
  EXPECT_THROW(CampaignSummary::from_json(nlohmann::json::object()), std::runtime_error);
}

// ---- the command line ----

using Command = testkit::ProgramRun;

Command run_cli(const std::string& args, const std::string& name, const std::string& env = "") {
  const Command r = testkit::run_program(KVC_FUZZ_BINARY, args, ::testing::TempDir() + "kvc-cli-" + name + ".log", env);
  testkit::print_program_run(r, 2000);
  return r;
}

TEST(Cli, RefusesAnUnknownBackendWithExitStatus2) {
  const Command r = run_cli("run --backend gpu --rounds 1", "unknown-backend");
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_NE(r.output.find("--backend"), std::string::npos);
  EXPECT_NE(r.output.find("gpu"), std::string::npos);
  EXPECT_EQ(run_cli("replay --backend cpu nothing.json", "unknown-backend-replay").status, kExitUsage);
}

TEST(Cli, OracleBackendRunsEveryPropertyAndWritesTheJsonSummary) {
  const std::string json = ::testing::TempDir() + "kvc-cli-summary.json";
  const Command r = run_cli("run --backend oracle --rounds 1 --cases 1 --max-size 5 --corpus '" + ::testing::TempDir() +
                                "kvc-cli-corpus' --json '" + json + "'",
                            "oracle-run");
  // One case per property cannot hit every tracked class: a coverage gap, exit status 3.
  EXPECT_EQ(r.status, kExitCoverageGap);
  EXPECT_NE(r.output.find("COVERAGE GAP"), std::string::npos);
  const nlohmann::json j = testkit::read_json_file(json);
  EXPECT_EQ(j.at("backend").get<std::string>().rfind("oracle", 0), 0u) << j.at("backend");
  EXPECT_EQ(j.at("max_tokens").get<std::int64_t>(), 0) << "the oracle backend keeps the properties' own limits";
  ASSERT_EQ(j.at("properties").size(), all_properties().size());
  for (const auto& p : j.at("properties")) {
    EXPECT_GE(p.at("cases").get<std::int64_t>(), 1) << p.at("name");
    EXPECT_TRUE(p.contains("cases_per_second") && p.contains("class_hits") && p.contains("missing_classes"));
  }
  EXPECT_EQ(j.at("exit_code").get<int>(), kExitCoverageGap);
  EXPECT_EQ(j.at("properties_without_cases").size(), 0u);

  // The same summary through `summarize`, alone and as two segments.
  EXPECT_EQ(run_cli("summarize '" + json + "'", "summarize-one").status, kExitCoverageGap);
  const Command two = run_cli("summarize '" + json + "' '" + json + "'", "summarize-two");
  EXPECT_EQ(two.status, kExitCoverageGap);
  EXPECT_NE(two.output.find("2 segments"), std::string::npos);
}

TEST(Cli, DeviceBackendWithoutAUsableGpuIsRefusedWithExitStatus2) {
  // CUDA_VISIBLE_DEVICES=-1 hides every GPU, so this holds on GPU machines too.
  const Command r = run_cli("run --backend device --rounds 1", "no-device", "CUDA_VISIBLE_DEVICES=-1");
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_NE(r.output.find("--backend device"), std::string::npos);
  EXPECT_EQ(r.output.find("round 1"), std::string::npos) << "no case may run";
  // A CUDA build names the missing device; a CPU build says it has no device backend.
  EXPECT_TRUE(r.output.find("needs a CUDA GPU") != std::string::npos ||
              r.output.find("no device backend") != std::string::npos);
  const Command replay = run_cli("replay --backend device nothing.json", "no-device-replay", "CUDA_VISIBLE_DEVICES=-1");
  EXPECT_EQ(replay.status, kExitUsage);
}

TEST(Cli, RefusesContradictoryBackendFlags) {
  EXPECT_EQ(run_cli("run --backend device --mutation scale-pad-one --rounds 1", "device-mutation").status, kExitUsage);
  const Command r = run_cli("run --kernels /nonexistent.so --rounds 1", "oracle-kernels");
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_NE(r.output.find("--kernels"), std::string::npos);
  EXPECT_EQ(run_cli("run --property no-such-property --rounds 1", "unknown-property").status, kExitUsage);
}

}  // namespace
}  // namespace kvc::fuzz
