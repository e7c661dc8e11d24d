// runner_device_test.cpp (GPU): `kvconform run` against a kernel library on the device.
//
// Our kernels pass every kernel suite (matrix, dspark, golden, invalid) on the small scenarios;
// the test-only library whose packed584 records carry the pad byte 0x01
// (kvconform_kernels_planted) fails the matrix, and the run's JSON names every differing site a
// pad byte. Catches: a run that reports kernel conformance without running it, a kernel failure
// that does not fail the run, and classes lost between the checks and the reports.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "testkit/io/case_file.h"
#include "testkit/device/device_buffers.h"

namespace {

int run(const std::string& args, const std::string& name) {
  const std::string log = ::testing::TempDir() + "kvc-runner-device-" + name + ".log";
  const std::string command = std::string("'") + KVCONFORM_BINARY + "' " + args + " > '" + log + "' 2>&1";
  const int raw = std::system(command.c_str());
  std::printf("$ %s\n-> see %s\n", command.c_str(), log.c_str());
  std::system(("tail -40 '" + log + "'").c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

#define KVC_REQUIRE_DEVICE()                                              \
  do {                                                                    \
    const std::string reason = ::kvc::testkit::cuda_device_unavailable(); \
    if (!reason.empty()) GTEST_SKIP() << reason;                          \
  } while (0)

TEST(RunnerDevice, OurKernelsPassEveryKernelSuite) {
  KVC_REQUIRE_DEVICE();
  const std::string json = ::testing::TempDir() + "kvc-runner-device.json";
  EXPECT_EQ(run("run --max-tokens 17 --json '" + json + "'", "builtin"), 0);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_TRUE(j.at("kernel_conformance").at("ran").get<bool>());
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), 0);
  std::set<std::string> kernel_suites;
  for (const auto& c : j.at("checks"))
    if (c.at("where") == "kernel" && c.at("verdict") == "passed")
      kernel_suites.insert(c.at("suite").get<std::string>());
  EXPECT_EQ(kernel_suites, (std::set<std::string>{"matrix", "dspark", "golden", "invalid"}));
}

TEST(RunnerDevice, APlantedPadByteFailsTheMatrixAndIsNamed) {
  KVC_REQUIRE_DEVICE();
  const std::string json = ::testing::TempDir() + "kvc-runner-device-planted.json";
  EXPECT_EQ(run(std::string("run --kernels '") + KVC_PLANTED_KERNELS +
                    "' --formats packed584 --suites matrix --max-tokens 17 --json '" + json + "'",
                "planted"),
            1);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_GT(j.at("counts").at("failed").get<int>(), 0);
  const nlohmann::json& sites = j.at("mismatch_classes").at("sites");
  EXPECT_GT(sites.value("pad_byte", 0), 0) << sites.dump();
  EXPECT_EQ(sites.size(), 1u) << "pad bytes only: " << sites.dump();
}

}  // namespace
