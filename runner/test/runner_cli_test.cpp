// runner_cli_test.cpp: the kvconform command as a user runs it, and the old kvconform-fuzz and
// kvconform-bench commands that share its code.
//
// Catches: a CPU-only run that does not pass, or that exits 0 without --cpu-only although no
// kernel was checked (and without saying so); JSON or JUnit files that do not parse or miss
// checks; a broken oracle that the CPU conformance lets through, or whose defect the classes do
// not name; decode printing nothing useful; the fuzz and bench commands lost in the move (in the
// runner or in the old executables); --profile not reaching the fuzz campaign; a kernel library
// checked without a device reported as anything but skipped (exit 3), or its exports and
// declarations missing from the report; --ops refusing an op of the ABI; a crash in a suite's
// process that ends the run, loses the report, passes, fails another check than the one it crashed
// in, or stops the suite instead of going on after that check; a crash outside any check that is
// not said as "ended early" (KVC_RUN_TEST_CHILD_CRASH plants them, suite_child.h); the stacked op
// judged under anything but the library's declared stacked profile unless --stacked-profile says
// otherwise, or the report not saying which.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "testkit/io/case_file.h"
#include "testkit/process/program_run.h"

namespace {

using Command = kvc::testkit::ProgramRun;

Command run_command(const std::string& binary, const std::string& args, const std::string& name,
                    const std::string& env = "") {
  const Command r = kvc::testkit::run_program(binary, args, ::testing::TempDir() + "kvc-runner-" + name + ".log", env);
  kvc::testkit::print_program_run(r, 6000);
  return r;
}

Command kvconform(const std::string& args, const std::string& name, const std::string& env = "") {
  return run_command(KVCONFORM_BINARY, args, name, env);
}

std::string temp(const std::string& name) { return ::testing::TempDir() + "kvc-runner-" + name; }

// check_junit.py's verdict on a file (0: well-formed and counts add up).
int check_junit(const std::string& path, const std::string& expectations) {
#ifdef KVC_PYTHON3
  const std::string command =
      std::string("'") + KVC_PYTHON3 + "' '" + KVC_CHECK_JUNIT + "' '" + path + "' " + expectations;
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
#else
  (void)path;
  (void)expectations;
  return -2;
#endif
}

// Hides every GPU, so that these hold on a GPU machine too.
constexpr const char* kNoGpu = "CUDA_VISIBLE_DEVICES=-1";

TEST(RunnerCli, CpuOnlyRunPassesAndWritesJsonAndJunit) {
  const std::string json = temp("cpu.json"), xml = temp("cpu.xml");
  const Command r =
      kvconform("run --cpu-only --max-tokens 17 --json '" + json + "' --junit '" + xml + "'", "cpu-only", kNoGpu);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("KERNEL CONFORMANCE SKIPPED"), std::string::npos) << "the skip is said even when asked for";
  EXPECT_NE(r.output.find("summary (op x format)"), std::string::npos);
  EXPECT_NE(r.output.find("PASSED"), std::string::npos);

  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_EQ(j.at("exit_code").get<int>(), 0);
  EXPECT_FALSE(j.at("kernel_conformance").at("ran").get<bool>());
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), 0);
  EXPECT_GT(j.at("counts").at("passed").get<int>(), 100);
  std::set<std::string> suites, formats;
  for (const auto& c : j.at("checks")) {
    suites.insert(c.at("suite").get<std::string>());
    formats.insert(c.at("format").get<std::string>());
    EXPECT_EQ(c.at("where").get<std::string>(), "oracle");
  }
  EXPECT_EQ(suites, (std::set<std::string>{"golden", "invalid", "registry", "checker"}));
  for (const char* f : {"packed584", "packed528", "fp8_512", "bf16_512"}) EXPECT_TRUE(formats.count(f)) << f;
  const int junit = check_junit(xml, "--expect-failures none");
  if (junit == -2) GTEST_SKIP() << "python3 not found at configure time: the JUnit file was not parsed";
  EXPECT_EQ(junit, 0);
}

TEST(RunnerCli, WithoutCpuOnlyTheSkippedKernelConformanceIsNotAPass) {
  const Command r = kvconform("run --max-tokens 1 --suites golden,checker --formats packed584", "no-gpu", kNoGpu);
  EXPECT_EQ(r.status, 3) << "kernel conformance skipped without --cpu-only must not exit 0";
  EXPECT_NE(r.output.find("KERNEL CONFORMANCE SKIPPED"), std::string::npos);
  EXPECT_NE(r.output.find("INCOMPLETE"), std::string::npos);
}

TEST(RunnerCli, ABrokenOracleFailsTheGoldenSuiteWithItsDefectNamed) {
  const std::string json = temp("mutant.json"), xml = temp("mutant.xml");
  const Command r = kvconform("run --cpu-only --suites golden --oracle-mutation ties-away-from-zero --json '" + json +
                                  "' --junit '" + xml + "'",
                              "mutant", kNoGpu);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("rounding tie"), std::string::npos);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_GT(j.at("counts").at("failed").get<int>(), 0);
  EXPECT_GT(j.at("mismatch_classes").at("sites").at("rounding_tie").get<int>(), 0);
  EXPECT_EQ(j.at("mismatch_classes").at("sites").size(), 1u) << "ties only: " << j.at("mismatch_classes").dump();
  const int junit = check_junit(xml, "--expect-failures any");
  if (junit == -2) GTEST_SKIP() << "python3 not found at configure time: the JUnit file was not parsed";
  EXPECT_EQ(junit, 0);
}

// A library that implements only the store op, checked on a machine without a device (GPUs
// hidden): kernel conformance is skipped (exit 3, never PASSED, "ran" false, no kernel byte), and
// in a build with the device backend the report still lists what the library exports and
// declares, per ABI op, with the library named once.
TEST(RunnerCli, AStoreOnlyLibraryWithoutADeviceIsSkippedAndItsDeclarationsListed) {
  const std::string json = temp("store-only.json"), xml = temp("store-only.xml");
  const Command r = kvconform(std::string("run --kernels '") + KVC_FAKE_STORE_ONLY +
                                  "' --max-tokens 1 --suites checker,store --formats packed584 --json '" + json +
                                  "' --junit '" + xml + "'",
                              "store-only", kNoGpu);
  EXPECT_EQ(r.status, 3) << "no device: kernel conformance could not run";
  EXPECT_NE(r.output.find("KERNEL CONFORMANCE SKIPPED"), std::string::npos);
  EXPECT_EQ(r.output.find("PASSED"), std::string::npos);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_EQ(j.at("exit_code").get<int>(), 3);
  EXPECT_EQ(j.at("verdict").get<std::string>(), "kernels_skipped");
  EXPECT_FALSE(j.at("kernel_conformance").at("ran").get<bool>());
  EXPECT_EQ(j.at("kernel_conformance").at("kernel_bytes_compared").get<std::int64_t>(), 0);
  if (j.at("library").get<std::string>().empty()) {
    // A build without the device backend loads no library at all.
    EXPECT_TRUE(j.at("coverage").empty());
  } else {
    EXPECT_NE(j.at("library").get<std::string>().find("fake store-only library"), std::string::npos);
    std::map<std::string, nlohmann::json> ops;
    for (const auto& row : j.at("coverage")) ops[row.at("op").get<std::string>()] = row;
    EXPECT_EQ(ops.size(), 6u) << "every op of the ABI is listed";
    EXPECT_TRUE(ops.at("store_rotated").at("exported").get<bool>());
    EXPECT_EQ(ops.at("store_rotated").at("declared_supported"),
              nlohmann::json::array({"packed584/bf16", "packed528/bf16"}));
    EXPECT_EQ(ops.at("store_rotated").at("bytes_compared").get<std::int64_t>(), 0);
    EXPECT_EQ(ops.at("store_rotated").at("status").get<std::string>(), "not run");
    EXPECT_FALSE(ops.at("stacked_ctx_kv").at("exported").get<bool>());
    EXPECT_EQ(ops.at("stacked_ctx_kv").at("status").get<std::string>(), "not exported");
    EXPECT_EQ(ops.at("kv_only").at("status").get<std::string>(), "not declared supported");
    EXPECT_EQ(ops.at("legacy").at("status").get<std::string>(), "not declared supported");
    EXPECT_NE(r.output.find("kernel coverage per ABI op"), std::string::npos);
    EXPECT_NE(r.output.find("kvc_stacked_ctx_kv NOT EXPORTED"), std::string::npos);
  }
  const int junit = check_junit(xml, "--expect-failures none");
  if (junit == -2) GTEST_SKIP() << "python3 not found at configure time: the JUnit file was not parsed";
  EXPECT_EQ(junit, 0);
}

// The checks of a JSON report by suite, in order: "invalid" -> names.
std::map<std::string, std::vector<nlohmann::json>> checks_by_suite(const nlohmann::json& report) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (const auto& c : report.at("checks")) out[c.at("suite").get<std::string>()].push_back(c);
  return out;
}

// A process running a suite crashes in a check (abort(), SIGABRT) or throws from it: that check
// alone fails with how its process ended, the suite goes on in a new process after it, the next
// suite runs, and every report is written. The same checks as a clean run, in the same order.
TEST(RunnerCli, ACrashInASuiteProcessFailsItsCheckAndTheRunGoesOn) {
  const std::string args = "run --cpu-only --suites invalid,checker --formats packed584 --max-tokens 1";
  const std::string clean_json = temp("crash-clean.json");
  ASSERT_EQ(kvconform(args + " --json '" + clean_json + "'", "crash-clean", kNoGpu).status, 0);
  const auto clean = checks_by_suite(kvc::testkit::read_json_file(clean_json));
  ASSERT_GT(clean.at("invalid").size(), 6u);
  const std::string crashed_name = clean.at("invalid")[5].at("name").get<std::string>();

  for (const auto& [how, text] : std::map<std::string, std::string>{
           {"abort", "the process running this check ended: killed by signal 6"},
           {"throw", "the check ended its process with an exception: planted by KVC_RUN_TEST_CHILD_CRASH"}}) {
    SCOPED_TRACE(how);
    const std::string json = temp("crash-" + how + ".json"), xml = temp("crash-" + how + ".xml");
    const Command r = kvconform(args + " --json '" + json + "' --junit '" + xml + "'", "crash-" + how,
                                std::string(kNoGpu) + " KVC_RUN_TEST_CHILD_CRASH=oracle:invalid:5:" + how);
    EXPECT_EQ(r.status, 1) << "a crash is a failure";
    EXPECT_NE(r.output.find("the suite went on in a new process from check [7/"), std::string::npos);
    EXPECT_NE(r.output.find("FAILED"), std::string::npos);
    const nlohmann::json j = kvc::testkit::read_json_file(json);
    EXPECT_EQ(j.at("exit_code").get<int>(), 1);
    EXPECT_EQ(j.at("counts").at("failed").get<int>(), 1);
    const auto got = checks_by_suite(j);
    ASSERT_EQ(got.at("invalid").size(), clean.at("invalid").size()) << "every check of the suite ran";
    ASSERT_EQ(got.at("checker").size(), clean.at("checker").size()) << "the next suite ran";
    for (std::size_t i = 0; i < got.at("invalid").size(); ++i) {
      const nlohmann::json& c = got.at("invalid")[i];
      EXPECT_EQ(c.at("name"), clean.at("invalid")[i].at("name"));
      EXPECT_EQ(c.at("verdict").get<std::string>(), i == 5 ? "failed" : "passed") << c.at("name");
    }
    EXPECT_EQ(got.at("invalid")[5].at("name").get<std::string>(), crashed_name);
    EXPECT_EQ(got.at("invalid")[5].at("message").get<std::string>().rfind(text, 0), 0u)
        << got.at("invalid")[5].at("message");
    ASSERT_EQ(j.at("incidents").size(), 1u);
    EXPECT_NE(j.at("incidents")[0].get<std::string>().find("oracle invalid: check [6/"), std::string::npos);
    const int junit = check_junit(xml, "--expect-failures 1");
    if (junit != -2) {
      EXPECT_EQ(junit, 0);
    }
  }
}

// A check that never finishes (a hung kernel) is failed as HUNG after --check-timeout, its process
// killed; the suite goes on after it and every report is written. Defect: the run waits forever
// (this test would time out), or the hung check is not the one failed.
TEST(RunnerCli, AHungCheckIsFailedAfterTheCheckTimeoutAndTheRunGoesOn) {
  const std::string json = temp("hang.json");
  const Command r = kvconform(
      "run --cpu-only --suites invalid,checker --formats packed584 --max-tokens 1 "
      "--check-timeout 2 --json '" +
          json + "'",
      "hang", std::string(kNoGpu) + " KVC_RUN_TEST_CHILD_CRASH=oracle:invalid:5:hang");
  EXPECT_EQ(r.status, 1) << r.output;
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), 1);
  const auto got = checks_by_suite(j);
  ASSERT_GT(got.at("invalid").size(), 6u) << "the suite went on after the hung check";
  EXPECT_EQ(got.at("invalid")[5].at("verdict").get<std::string>(), "failed");
  EXPECT_EQ(got.at("invalid")[5].at("message").get<std::string>().rfind("HUNG: ", 0), 0u)
      << got.at("invalid")[5].at("message");
  EXPECT_GT(got.at("checker").size(), 0u) << "the next suite ran";
}

// A process that dies outside any check (here: before check 5 began) has no check to blame and
// would die there again: its suite ends early, said so, and fails; the run goes on.
TEST(RunnerCli, ACrashOutsideAnyCheckEndsItsSuiteEarlyAndTheRunGoesOn) {
  const std::string json = temp("crash-between.json");
  const Command r =
      kvconform("run --cpu-only --suites invalid,checker --formats packed584 --max-tokens 1 --json '" + json + "'",
                "crash-between", std::string(kNoGpu) + " KVC_RUN_TEST_CHILD_CRASH=oracle:invalid:5:abort-between");
  EXPECT_EQ(r.status, 1);
  const nlohmann::json j = kvc::testkit::read_json_file(json);
  const auto got = checks_by_suite(j);
  ASSERT_EQ(got.at("invalid").size(), 6u) << "five checks, then the failed process";
  EXPECT_EQ(got.at("invalid").back().at("name").get<std::string>(), "process");
  EXPECT_EQ(got.at("invalid").back().at("verdict").get<std::string>(), "failed");
  EXPECT_GT(got.at("checker").size(), 0u) << "the next suite ran";
  ASSERT_EQ(j.at("incidents").size(), 1u);
  const std::string incident = j.at("incidents")[0].get<std::string>();
  EXPECT_EQ(incident.rfind("suite oracle invalid ended early: ", 0), 0u) << incident;
  EXPECT_NE(incident.find(" checks not run (killed by signal 6"), std::string::npos) << incident;
  EXPECT_NE(r.output.find(incident), std::string::npos);
}

// A library declaring another stacked profile (the rope double, kernel ABI 1.3), checked without a
// device: the header says the stacked op is judged under the library's declaration per path, the
// coverage table and the JSON list the profile it declares per path; --stacked-profile replaces it
// and the header says so; a spec the build cannot read is a usage error.
TEST(RunnerCli, TheStackedProfileIsTheLibrarysDeclarationUnlessOverridden) {
#ifdef KVC_DOUBLE_STACKED_ROPE
  const std::string json = temp("stacked-declared.json");
  const std::string base =
      std::string("run --kernels '") + KVC_DOUBLE_STACKED_ROPE + "' --ops stacked_ctx_kv --suites stacked --json '";
  const Command declared = kvconform(base + json + "'", "stacked-declared", kNoGpu);
  EXPECT_EQ(declared.status, 3) << "no device: kernel conformance could not run";
  EXPECT_NE(declared.output.find("stacked profile: declared by the library, per path taken"), std::string::npos);
  EXPECT_NE(declared.output.find("stacked profile `rope=fma-pair` (per-layer, stacked)"), std::string::npos);
  EXPECT_NE(declared.output.find("stacked profile `rope=fma-pair` (fused)"), std::string::npos);
  EXPECT_EQ(kvc::testkit::read_json_file(json).at("stacked_profile").get<std::string>(),
            "declared by the library, per path taken");
  const Command over = kvconform(base + json + "' --stacked-profile contract", "stacked-override", kNoGpu);
  EXPECT_EQ(over.status, 3);
  EXPECT_NE(over.output.find("stacked profile: contract (--stacked-profile)"), std::string::npos);
  EXPECT_EQ(kvc::testkit::read_json_file(json).at("stacked_profile").get<std::string>(),
            "contract (--stacked-profile)");
#endif
  const Command bad = kvconform("run --cpu-only --stacked-profile reduction=tree", "bad-stacked-profile");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--stacked-profile 'reduction=tree'"), std::string::npos);
}

TEST(RunnerCli, EveryAbiOpIsAnOpsValue) {
  for (const char* op : {"kv_only", "kv_only+kv_norm", "legacy", "kv_norm", "store_rotated", "stacked_ctx_kv"}) {
    const Command r = kvconform(std::string("run --cpu-only --suites checker --formats packed584 --ops ") + op,
                                std::string("ops-") + op, kNoGpu);
    EXPECT_EQ(r.status, 0) << op;
  }
  EXPECT_EQ(kvconform("run --cpu-only --ops store", "ops-unknown").status, 2);
}

TEST(RunnerCli, UsageErrorsExit2) {
  EXPECT_EQ(kvconform("run --cpu-only --kernels /nonexistent.so", "cpu-only-kernels").status, 2);
  EXPECT_EQ(kvconform("run --cpu-only --formats packed999", "bad-format").status, 2);
  EXPECT_EQ(kvconform("run --cpu-only --profile clamp=nonsense", "bad-profile").status, 2);
  EXPECT_EQ(kvconform("run --cpu-only --suites nothing", "bad-suite").status, 2);
  EXPECT_EQ(kvconform("frobnicate", "bad-command").status, 2);
}

TEST(RunnerCli, DecodePrintsAGeneratedPageAndAFixture) {
  const Command r = kvconform("decode --format packed584 --tokens 17 --block-size 16 --page 0", "decode");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("scales: byte(E)"), std::string::npos);
  EXPECT_NE(r.output.find("written"), std::string::npos);
  EXPECT_NE(r.output.find("dim 448"), std::string::npos);
  const Command f = kvconform(std::string("decode '") + KVC_GOLDEN_FIXTURE_DIR + "/kv_only.bf16_512.json' --all-dims",
                              "decode-fixture");
  EXPECT_EQ(f.status, 0);
  EXPECT_NE(f.output.find("golden fixture kv_only.bf16_512"), std::string::npos);
  EXPECT_NE(f.output.find("every dim"), std::string::npos);
  EXPECT_EQ(kvconform("decode --format packed584 --page 99", "decode-bad-page").status, 2);
}

TEST(RunnerCli, FuzzAndReplaySubcommands) {
#if !KVC_TEST_HAVE_FUZZ
  GTEST_SKIP() << "RapidCheck not found: the fuzz commands are not built";
#else
  const Command list = kvconform("fuzz list", "fuzz-list");
  EXPECT_EQ(list.status, 0);
  EXPECT_NE(list.output.find("differential"), std::string::npos);
  const Command bad = kvconform("fuzz run --profile clamp=nonsense --rounds 1", "fuzz-bad-profile");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--profile"), std::string::npos);
  const Command device =
      kvconform("fuzz run --backend device --profile sglang-store --rounds 1", "fuzz-device-profile");
  EXPECT_EQ(device.status, 2) << "a kernel library declares its own profile";
  const std::string json = temp("fuzz.json");
  const Command run = kvconform(
      "fuzz run --profile sglang-store --property decoder-total --rounds 1 --cases 2 "
      "--max-size 5 --corpus '" +
          temp("corpus") + "' --json '" + json + "'",
      "fuzz-profile");
  EXPECT_TRUE(run.status == 0 || run.status == 3) << "passed, or a coverage gap with so few cases";
  EXPECT_NE(run.output.find("profile `sglang-store`"), std::string::npos);
  EXPECT_NO_THROW(kvc::testkit::read_json_file(json));
  EXPECT_EQ(kvconform("replay /nonexistent.json", "replay-missing").status, 2);
  EXPECT_EQ(kvconform("fuzz replay /nonexistent.json", "fuzz-replay-missing").status, 2);
  // The old executable: the same commands, the new flag included.
  const Command old = run_command(KVC_FUZZ_BINARY, "run --profile clamp=nonsense --rounds 1", "old-fuzz-bad-profile");
  EXPECT_EQ(old.status, 2);
  EXPECT_EQ(run_command(KVC_FUZZ_BINARY, "list", "old-fuzz-list").status, 0);
#endif
}

TEST(RunnerCli, BenchSubcommandAndTheOldKvconformBench) {
#if !KVC_TEST_HAVE_BENCH
  GTEST_SKIP() << "Google Benchmark not found: the bench commands are not built";
#else
  const Command r = kvconform("bench --oracle-tokens 64 --formats packed584 --benchmark_list_tests=true", "bench-list");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("oracle/kv_only/packed584/tokens:64/threads:1"), std::string::npos);
  EXPECT_EQ(kvconform("bench --formats packed999", "bench-bad-format").status, 2);
  const Command timed = kvconform(
      "bench --oracle-tokens 64 --formats fp8_512 --benchmark_filter=oracle/.*/threads:1 --benchmark_min_time=0.01",
      "bench-run");
  EXPECT_EQ(timed.status, 0);
  EXPECT_NE(timed.output.find("tokens_per_second"), std::string::npos);
  const Command old = run_command(KVC_BENCH_BINARY, "--oracle-tokens 64 --benchmark_list_tests=true", "old-bench");
  EXPECT_EQ(old.status, 0);
  EXPECT_NE(old.output.find("oracle/kv_only/bf16_512/tokens:64"), std::string::npos);
#endif
}

}  // namespace
