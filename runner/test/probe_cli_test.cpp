// probe_cli_test.cpp: `kvconform probe` as a user runs it, on a machine without a GPU (GPUs
// hidden, so that these hold on a GPU machine too).
//
// Catches: a probe that, with no device, exits 0 or says anything like PASSED or "every rule
// classified" (nothing was sent); the same exit status for "no GPU" as for a library that does not
// load or a usage error; an unknown op or rule accepted; the child subcommand shown in the help; a
// test double that does not load as a library.
#include <gtest/gtest.h>

#include <fstream>

#include "testkit/process/program_run.h"

namespace {

using Command = kvc::testkit::ProgramRun;

constexpr const char* kNoGpu = "CUDA_VISIBLE_DEVICES=-1";

Command kvconform(const std::string& args, const std::string& name, const std::string& env = kNoGpu) {
  const Command r =
      kvc::testkit::run_program(KVCONFORM_BINARY, args, ::testing::TempDir() + "kvc-probe-cli-" + name + ".log", env);
  kvc::testkit::print_program_run(r, 4000);
  return r;
}

void expect_nothing_probed(const Command& r) {
  EXPECT_EQ(r.status, 4) << "no device: a distinct non-zero status";
  EXPECT_NE(r.output.find("NOTHING PROBED"), std::string::npos);
  EXPECT_EQ(r.output.find("every rule classified"), std::string::npos);
  EXPECT_EQ(r.output.find("PASSED"), std::string::npos);
  EXPECT_EQ(r.output.find("passed"), std::string::npos);
}

TEST(ProbeCli, WithoutAGpuNothingIsProbedAndItSaysSo) {
  const std::string json = ::testing::TempDir() + "kvc-probe-cli-no-gpu.json";
  std::remove(json.c_str());
  const Command r = kvconform("probe --json '" + json + "'", "no-gpu");
  expect_nothing_probed(r);
#if KVC_TEST_HAVE_DEVICE_BACKEND
  EXPECT_NE(r.output.find("the GPU is absent"), std::string::npos);
#endif
  EXPECT_FALSE(std::ifstream(json).good()) << "no report for a probe that sent nothing";
}

TEST(ProbeCli, UsageErrorsExit2) {
  EXPECT_EQ(kvconform("probe --ops store", "bad-op").status, 2);
  EXPECT_EQ(kvconform("probe --rules NoSuchRule", "bad-rule").status, 2);
  EXPECT_EQ(kvconform("probe --timeout 0", "bad-timeout").status, 2);
  EXPECT_EQ(kvconform("probe --frobnicate", "bad-option").status, 2);
  EXPECT_EQ(kvconform("probe-one", "one-without-cell").status, 2);
}

TEST(ProbeCli, HelpNamesTheExitStatusesAndHidesTheChild) {
  const Command probe = kvconform("probe --help", "help-probe");
  EXPECT_EQ(probe.status, 0);
  EXPECT_NE(probe.output.find("NOTHING PROBED"), std::string::npos);
  EXPECT_NE(probe.output.find("--rules"), std::string::npos);
  const Command all = kvconform("--help", "help");
  EXPECT_NE(all.output.find("probe"), std::string::npos);
  EXPECT_EQ(all.output.find("probe-one"), std::string::npos) << "the child subcommand is not for users";
}

#if KVC_TEST_HAVE_DEVICE_BACKEND
TEST(ProbeCli, ALibraryThatDoesNotLoadExits3) {
  const Command r = kvconform("probe --kernels /nonexistent/libkernels.so", "missing-library");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.output.find("/nonexistent/libkernels.so"), std::string::npos);
}

TEST(ProbeCli, ATestDoubleLoadsAndWithoutAGpuIsNotProbed) {
  const Command r = kvconform(std::string("probe --kernels '") + KVC_DOUBLE_WRITES_PAST_END + "'", "double");
  expect_nothing_probed(r);
  EXPECT_NE(r.output.find("test double writes_past_end"), std::string::npos);
}
#endif

}  // namespace
