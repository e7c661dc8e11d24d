// runner_device_test.cpp (GPU): `kvconform run` against a kernel library on the device.
//
// Our kernels (the builtin library, whatever KVC_KERNELS says in the environment) pass every
// kernel suite (matrix, dspark, golden, invalid, kv_norm, fused_kv_norm, store, stacked) on the
// small scenarios, and every op of the ABI compares bytes; the test-only library whose packed584
// records carry the pad byte 0x01 (kvconform_kernels_planted) fails the matrix, and the run's JSON
// names every differing site a pad byte; a library that implements the store op alone compares
// nothing in the insert suites (NOTHING CHECKED, exit 4) and fails the store suite (its entry
// point answers KVC_STATUS_UNSUPPORTED although the op is declared); a library that faults
// (cudaErrorIllegalAddress) on every call above 4096 rows (testkit/doubles/faults_on_large_batch.cu)
// fails exactly those checks, each with its CUDA fault, and every other check passes, exit 1, the
// report written. Catches: a run that reports
// kernel conformance without comparing a byte (the report these rules answer: a store-only
// library got PASSED), a test of "our kernels" that checks the library KVC_KERNELS names, a
// kernel failure that does not fail the run, an op of the ABI the runner never calls, and classes
// lost between the checks and the reports, and a CUDA fault that ends the run or fails the checks
// after it (the lost context of a run in one process).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "testkit/device/device_buffers.h"
#include "testkit/io/case_file.h"
#include "testkit/process/program_run.h"

namespace {

using Command = kvc::testkit::ProgramRun;

// `env` is a prefix of the command, e.g. "env -u KVC_KERNELS". The log's last lines are printed.
Command run(const std::string& args, const std::string& name, const std::string& env = "") {
  const std::string log = ::testing::TempDir() + "kvc-runner-device-" + name + ".log";
  const Command r = kvc::testkit::run_program(KVCONFORM_BINARY, args, log, env);
  const std::size_t tail = r.output.size() > 6000 ? r.output.size() - 6000 : 0;
  std::printf("$ %s\n-> exit %d\n%s\n", r.command.c_str(), r.status, r.output.substr(tail).c_str());
  return r;
}

#define KVC_REQUIRE_DEVICE()                                              \
  do {                                                                    \
    const std::string reason = ::kvc::testkit::cuda_device_unavailable(); \
    if (!reason.empty()) GTEST_SKIP() << reason;                          \
  } while (0)

TEST(RunnerDevice, OurKernelsPassEveryKernelSuite) {
  KVC_REQUIRE_DEVICE();
  const std::string json = ::testing::TempDir() + "kvc-runner-device.json";
  // Our kernels, not whatever KVC_KERNELS names (the device gate sets it for other libraries).
  EXPECT_EQ(run("run --max-tokens 17 --json '" + json + "'", "builtin", "env -u KVC_KERNELS").status, 0);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_NE(j.at("library").get<std::string>().find("(builtin"), std::string::npos) << j.at("library");
  EXPECT_TRUE(j.at("kernel_conformance").at("ran").get<bool>());
  EXPECT_GT(j.at("kernel_conformance").at("kernel_bytes_compared").get<std::int64_t>(), 0);
  EXPECT_EQ(j.at("verdict").get<std::string>(), "passed");
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), 0);
  std::set<std::string> kernel_suites;
  for (const auto& c : j.at("checks"))
    if (c.at("where") == "kernel" && c.at("verdict") == "passed")
      kernel_suites.insert(c.at("suite").get<std::string>());
  EXPECT_EQ(kernel_suites, (std::set<std::string>{"matrix", "dspark", "golden", "invalid", "kv_norm", "fused_kv_norm",
                                                  "store", "stacked"}));
  ASSERT_EQ(j.at("coverage").size(), 6u);
  for (const auto& op : j.at("coverage")) {
    EXPECT_EQ(op.at("status").get<std::string>(), "covered") << op.dump();
    EXPECT_GT(op.at("bytes_compared").get<std::int64_t>(), 0) << op.dump();
  }
}

TEST(RunnerDevice, APlantedPadByteFailsTheMatrixAndIsNamed) {
  KVC_REQUIRE_DEVICE();
  const std::string json = ::testing::TempDir() + "kvc-runner-device-planted.json";
  EXPECT_EQ(run(std::string("run --kernels '") + KVC_PLANTED_KERNELS +
                    "' --formats packed584 --suites matrix --max-tokens 17 --json '" + json + "'",
                "planted")
                .status,
            1);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_GT(j.at("counts").at("failed").get<int>(), 0);
  const nlohmann::json& sites = j.at("mismatch_classes").at("sites");
  EXPECT_GT(sites.value("pad_byte", 0), 0) << sites.dump();
  EXPECT_EQ(sites.size(), 1u) << "pad bytes only: " << sites.dump();
}

TEST(RunnerDevice, AStoreOnlyLibraryIsNeverPassed) {
  KVC_REQUIRE_DEVICE();
  // The suites the runner had when a store-only library got PASSED: they compare nothing here.
  const std::string json = ::testing::TempDir() + "kvc-runner-device-store-only.json";
  const Command inserts = run(std::string("run --kernels '") + KVC_FAKE_STORE_ONLY +
                                  "' --suites matrix,dspark,golden,invalid --max-tokens 17 --json '" + json + "'",
                              "store-only-inserts");
  EXPECT_EQ(inserts.status, 4);
  EXPECT_NE(inserts.output.find("NOTHING CHECKED"), std::string::npos);
  EXPECT_EQ(inserts.output.find("PASSED"), std::string::npos);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_FALSE(j.at("kernel_conformance").at("ran").get<bool>());
  EXPECT_EQ(j.at("kernel_conformance").at("kernel_bytes_compared").get<std::int64_t>(), 0);
  // Every suite: the store suite calls kvc_store_rotated, which answers 402 for a declared op.
  const Command all = run(std::string("run --kernels '") + KVC_FAKE_STORE_ONLY + "' --max-tokens 17", "store-only-all");
  EXPECT_EQ(all.status, 1);
  EXPECT_EQ(all.output.find("PASSED"), std::string::npos);
}

#ifdef KVC_DOUBLE_FAULTS_ON_LARGE_BATCH
// The rows of a check's call, from its name: the matrix, fused and store scenarios say
// "Tokens<n>" (plus 3 DP-padding rows), the stacked shapes "_T<n>_", kv_norm "Rows<n>"; 0 for the
// rest (golden fixtures, rule breakers, DSpark: all small).
std::int64_t rows_named(const std::string& name) {
  static const std::regex pattern("(?:Tokens|_T|^Rows)([0-9]+)");
  std::smatch m;
  return std::regex_search(name, m, pattern) ? std::stoll(m[1].str()) : 0;
}

TEST(RunnerDevice, ALibraryThatFaultsOnLargeBatchesFailsThoseChecksAndTheRunGoesOn) {
  KVC_REQUIRE_DEVICE();
  const std::string json = ::testing::TempDir() + "kvc-runner-device-faults.json";
  // 16384 tokens: the matrix, fused and store scenarios of that size and the stacked 8192-token
  // shape fault; every smaller case runs through our kernels.
  const Command r = run(std::string("run --kernels '") + KVC_DOUBLE_FAULTS_ON_LARGE_BATCH +
                            "' --formats packed584 --max-tokens 16384 --json '" + json +
                            "' --suites matrix,dspark,golden,invalid,kv_norm,fused_kv_norm,store,stacked",
                        "faults-on-large-batch");
  EXPECT_EQ(r.status, 1) << "a fault is a failure";
  EXPECT_NE(r.output.find("CUDA fault: cudaErrorIllegalAddress"), std::string::npos);
  const nlohmann::json j = kvc::testkit::read_json_file(json);  // written although processes faulted
  int faulted = 0, passed = 0;
  std::set<std::string> faulted_suites;
  for (const auto& c : j.at("checks")) {
    const std::string name = c.at("name").get<std::string>(), verdict = c.at("verdict").get<std::string>();
    if (c.at("where") == "kernel" && rows_named(name) > 4096) {
      // Failed with its fault; or skipped as with our kernels (the library was not called).
      EXPECT_NE(verdict, "passed") << name;
      if (verdict != "failed") continue;
      ++faulted;
      faulted_suites.insert(c.at("suite").get<std::string>());
      EXPECT_EQ(c.at("message").get<std::string>().rfind("CUDA fault: cudaErrorIllegalAddress: ", 0), 0u)
          << name << ": " << c.at("message");
    } else {
      passed += verdict == "passed";
      EXPECT_NE(verdict, "failed") << c.at("where") << " " << c.at("suite") << " " << name << ": " << c.at("message");
    }
  }
  EXPECT_EQ(faulted_suites, (std::set<std::string>{"matrix", "fused_kv_norm", "store", "stacked"}));
  EXPECT_GT(passed, 100);
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), faulted);
  // One incident per fault: each ended its process, and its suite went on after it.
  EXPECT_EQ(static_cast<int>(j.at("incidents").size()), faulted) << j.at("incidents").dump(1);
  for (const auto& incident : j.at("incidents"))
    EXPECT_NE(incident.get<std::string>().find("ended its process (CUDA fault: cudaErrorIllegalAddress"),
              std::string::npos)
        << incident;
  EXPECT_TRUE(j.at("kernel_conformance").at("ran").get<bool>());
}
#endif

}  // namespace
