// probe_process_test.cpp: the probe's child processes end as they ended.
//
// A child killed by a signal, one that exits without its result line, one that hangs past the
// time limit, and one that prints its result among other output must each come back as such, and
// classify as a crash, a hang or the reported call. Catches: a runner that reports a crash as an
// exit status, waits forever on a hung kernel, or loses the result line among a library's prints.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

#include "probe_process.h"
#include "testkit/probe/classify_probe.h"

namespace kvc::runner {
namespace {

std::string log_path(const std::string& name) { return ::testing::TempDir() + "kvc-probe-process-" + name + ".log"; }

ChildRun shell(const std::string& script, const std::string& name, double limit = 30) {
  return run_child({"/bin/sh", "-c", script}, log_path(name), limit);
}

testkit::ProbeVerdict verdict_of(const ChildRun& r) {
  testkit::ProbeInput in;
  in.child = r.outcome;
  in.observed = r.observed;
  in.expected.right_codes = {101};
  return testkit::classify_probe(in);
}

TEST(ProbeProcess, ASignalIsACrash) {
  const ChildRun r = shell("echo about to fault; kill -SEGV $$", "segv");
  EXPECT_EQ(r.outcome.end, testkit::ChildEnd::kSignaled);
  EXPECT_EQ(r.outcome.signal, SIGSEGV);
  EXPECT_FALSE(r.outcome.reported);
  EXPECT_EQ(r.outcome.last_line, "about to fault");
  const testkit::ProbeVerdict v = verdict_of(r);
  EXPECT_EQ(v.cls, testkit::ProbeClass::kCrashed);
  EXPECT_NE(v.where.find("SIGSEGV"), std::string::npos) << v.where;
}

TEST(ProbeProcess, AnExitWithoutAResultIsACrash) {
  const ChildRun r = shell("echo terminate called; exit 3", "exit3");
  EXPECT_EQ(r.outcome.end, testkit::ChildEnd::kExited);
  EXPECT_EQ(r.outcome.exit_code, 3);
  EXPECT_FALSE(r.outcome.reported);
  EXPECT_EQ(verdict_of(r).cls, testkit::ProbeClass::kCrashed);
}

TEST(ProbeProcess, AHangIsKilledAtTheLimit) {
  const auto start = std::chrono::steady_clock::now();
  const ChildRun r = shell("sleep 30", "hang", 0.5);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(r.outcome.end, testkit::ChildEnd::kTimedOut);
  EXPECT_EQ(verdict_of(r).cls, testkit::ProbeClass::kHung);
}

TEST(ProbeProcess, TheResultLineIsFoundAmongOtherOutput) {
  const ChildRun r = shell(
      "echo library banner; echo 'kvc-probe-result: {\"status\": 101, \"message\": \"kv dtype\", \"cuda_fault\": \"\", "
      "\"writes\": [], \"bad_rows\": []}'; echo bye >&2",
      "result");
  EXPECT_EQ(r.outcome.end, testkit::ChildEnd::kExited);
  EXPECT_EQ(r.outcome.exit_code, 0);
  ASSERT_TRUE(r.outcome.reported) << r.output;
  EXPECT_EQ(r.observed.status, 101);
  EXPECT_EQ(r.outcome.last_line, "bye");
  EXPECT_EQ(verdict_of(r).cls, testkit::ProbeClass::kRejectedRightCode);
}

TEST(ProbeProcess, OwnExecutableIsThisTest) {
  EXPECT_NE(own_executable().find("probe_process_test"), std::string::npos) << own_executable();
}

}  // namespace
}  // namespace kvc::runner

namespace kvc::runner {
namespace {

// Several at once, reported in order whatever order they end in; empty commands are not run.
TEST(ProbeProcess, ChildrenRunSeveralAtATimeAndAreReportedInOrder) {
  const std::string result =
      "echo 'kvc-probe-result: {\"status\": 0, \"message\": \"\", \"cuda_fault\": \"\", \"writes\": [], "
      "\"bad_rows\": []}'";
  const std::vector<std::vector<std::string>> commands = {{"/bin/sh", "-c", "sleep 2; " + result},
                                                          {},
                                                          {"/bin/sh", "-c", "kill -SEGV $$"},
                                                          {"/bin/sh", "-c", "sleep 30"},
                                                          {"/bin/sh", "-c", result},
                                                          {}};
  std::vector<std::size_t> order;
  std::vector<testkit::ProbeClass> classes;
  const auto start = std::chrono::steady_clock::now();
  run_children_in_order(commands, ::testing::TempDir() + "kvc-probe-order-", 2, 3.0,
                        [&](std::size_t i, const ChildRun* run, double seconds) {
                          order.push_back(i);
                          EXPECT_EQ(run == nullptr, commands[i].empty()) << i;
                          EXPECT_GE(seconds, 0.0);
                          testkit::ProbeInput in;
                          if (run == nullptr) {
                            in.not_sent = "empty";
                          } else {
                            in.child = run->outcome;
                            in.observed = run->observed;
                          }
                          classes.push_back(testkit::classify_probe(in).cls);
                        });
  // Serially the sleep and the hang alone take 5 s; two at a time they overlap (about 3 s).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 4.5);
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(classes,
            (std::vector<testkit::ProbeClass>{testkit::ProbeClass::kOkNothingWritten, testkit::ProbeClass::kNotSent,
                                              testkit::ProbeClass::kCrashed, testkit::ProbeClass::kHung,
                                              testkit::ProbeClass::kOkNothingWritten, testkit::ProbeClass::kNotSent}));
}

}  // namespace
}  // namespace kvc::runner
