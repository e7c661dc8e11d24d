// fuzz_device_campaign_test.cpp (GPU, fuzz): kvconform-fuzz campaigns with the device backend.
//
// ShortCampaignOverEveryProperty: `kvconform-fuzz run --backend device` (KVC_KERNELS, else our
// kernels; problems up to 65536 tokens, legacy problems up to 16384) for 60 s: no property fails and every
// property gets cases (a library that implements none of a property's cases is reported, not
// passed). KVC_FUZZ_SECONDS and KVC_FUZZ_SEED override the budget and the seed.
// FindsShrinksAndReplaysThePlantedKernelDefect: libkvconform_kernels_planted.so, our kernels built
// with KVC_KERNELS_PLANTED_DEFECT=1 (packed584 scale pad byte 0x01 instead of 0x00), must be found
// by a device campaign of the differential property, shrunk to one token, written as a case file,
// and that file must fail on the device against the planted library and pass on the CPU oracle
// and on our kernels, through the library and through `kvconform-fuzz replay`.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "testkit/device/gpu_test_support.h"
#include "kvc/fuzz/backend_choice.h"
#include "kvc/fuzz/campaign.h"
#include "testkit/io/case_file.h"
#include "testkit/process/program_run.h"

namespace kvc::fuzz {
namespace {

// The short run's problem size: small enough that every property gets cases within its minute.
constexpr std::int64_t kShortRunMaxTokens = 65536;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

using Command = testkit::ProgramRun;

Command run_cli(const std::string& args, const std::string& name, const std::string& env = "") {
  const Command r =
      testkit::run_program(KVC_FUZZ_BINARY, args, ::testing::TempDir() + "kvc-device-cli-" + name + ".log", env);
  testkit::print_program_run(r);
  return r;
}

TEST(DeviceCampaign, ShortCampaignOverEveryProperty) {
  KVC_REQUIRE_CUDA_DEVICE();
  const std::string dir = ::testing::TempDir() + "kvc-device-campaign";
  std::filesystem::create_directories(dir);
  const std::string json = dir + "/summary.json";
  // 60 s and problems up to 65536 tokens: every property gets cases in one short run (the first
  // round of a 30-s run with 262144-token problems ended before half of them had run).
  const Command r = run_cli("run --backend device --max-tokens " + std::to_string(kShortRunMaxTokens) + " --seconds " +
                                std::to_string(env_or("KVC_FUZZ_SECONDS", 60)) + " --seed " +
                                std::to_string(env_or("KVC_FUZZ_SEED", 20261201)) + " --corpus '" + dir +
                                "/corpus' --json '" + json + "'",
                            "short");
  ASSERT_NE(r.status, kExitUsage) << "the device campaign did not start";
  ASSERT_NE(r.status, kExitFailure) << "a property failed on the device: the case files are listed above";
  const nlohmann::json j = testkit::read_json_file(json);
  EXPECT_EQ(j.at("backend").get<std::string>().rfind("device:", 0), 0u) << j.at("backend");
  EXPECT_EQ(j.at("max_tokens").get<std::int64_t>(), kShortRunMaxTokens);
  EXPECT_EQ(j.at("max_legacy_tokens").get<std::int64_t>(), kDeviceMaxLegacyTokens);
  ASSERT_EQ(j.at("properties").size(), all_properties().size());
  for (const auto& p : j.at("properties")) {
    const std::string name = p.at("name").get<std::string>();
    if (p.at("cases").get<std::int64_t>() == 0 && p.at("discarded").get<std::int64_t>() > 0) {
      std::printf("NOTE: %s got no case: the library implements none of the cases it generated\n", name.c_str());
      continue;
    }
    EXPECT_GE(p.at("cases").get<std::int64_t>(), 1) << name << " got no case in the budget";
  }
  // Class gaps are expected in 30 s (the long campaign must have none); they are printed above.
  std::printf("%zu coverage gaps in this short run (exit status %d)\n", j.at("coverage_gaps").size(), r.status);
  std::filesystem::remove_all(dir);
}

TEST(DeviceCampaign, FindsShrinksAndReplaysThePlantedKernelDefect) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend planted(testkit::KernelLibrary::open(KVC_PLANTED_KERNELS));
  std::printf("planted library: %s\n", planted.name().c_str());
  CampaignConfig config;
  config.seconds = 120;
  config.properties = {"differential"};
  config.max_tokens = kDeviceMaxTokens;
  config.max_legacy_tokens = kDeviceMaxLegacyTokens;
  config.first_seed = env_or("KVC_FUZZ_SEED", 20261201);
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + "kvc-planted-kernel-corpus";
  config.program = KVC_FUZZ_BINARY;
  config.backend_flags = std::string("--backend device --kernels ") + KVC_PLANTED_KERNELS;
  const CampaignSummary s =
      run_campaign(config, planted, [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  ASSERT_EQ(s.failure_files.size(), 1u) << "the differential property did not find the planted pad byte in " << s.cases
                                        << " cases (" << s.seconds << " s)";
  const auto file = testkit::read_json_file(s.failure_files[0]);
  const InsertCase shrunk = testkit::case_from_json(file.at("case"));
  std::printf("found after %lld cases, %.2f s (shrinking included); shrunk to %lld token(s): %s\n",
              static_cast<long long>(s.cases), s.first_failure_seconds, static_cast<long long>(shrunk.num_inserted()),
              file.at("summary").get<std::string>().c_str());
  EXPECT_EQ(format_of(shrunk), RecordFormat::kPacked584) << "the defect lives in packed584 records only";
  EXPECT_EQ(shrunk.num_inserted(), 1) << "one live token shows the pad byte";

  // The case file: a failure on the planted library, a pass on the CPU oracle and on our kernels.
  EXPECT_TRUE(replay_case_file(file, planted).has_value()) << "replay on the planted library passed";
  EXPECT_FALSE(replay_case_file(file).has_value()) << "replay on the CPU oracle failed";
  testkit::DeviceBackend ours(testkit::KernelLibrary::builtin());
  EXPECT_FALSE(replay_case_file(file, ours).has_value()) << "replay on our kernels failed";

  // The same through the command line.
  const std::string path = s.failure_files[0];
  EXPECT_EQ(run_cli(std::string("replay --backend device --kernels ") + KVC_PLANTED_KERNELS + " '" + path + "'",
                    "replay-planted")
                .status,
            kExitFailure);
  EXPECT_EQ(run_cli("replay '" + path + "'", "replay-cpu").status, kExitPassed);
  EXPECT_EQ(run_cli("replay --backend device '" + path + "'", "replay-ours", "env -u KVC_KERNELS").status, kExitPassed);
  const Command campaign =
      run_cli(std::string("run --backend device --kernels ") + KVC_PLANTED_KERNELS +
                  " --property differential --stop-on-failure --seconds 60 --corpus '" + config.corpus_dir + "/cli'",
              "run-planted");
  EXPECT_EQ(campaign.status, kExitFailure);
  EXPECT_NE(campaign.output.find("replay on this backend:   "), std::string::npos) << "no reproduce line";
  std::filesystem::remove_all(config.corpus_dir);
}

}  // namespace
}  // namespace kvc::fuzz
