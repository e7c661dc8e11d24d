// suite_children_test.cpp: the pieces that run every suite in a process of its own
// (suite_children.h): a check's JSON both ways, the suite journal, what a process's journal and
// end add to the report (the merge), the "started" bookkeeping of the process running a suite, and
// the fork and exit descriptions. The CLI test (runner_cli_test) plants real crashes.
//
// Catches (each test names its defect): a field lost between the child's result and the parent's
// report (bytes per op, classes, the rsqrt tally, a skip reason); a journal line cut short by a
// crash read as a check; a crash in a check not failing that check, or failing one that passed;
// a CUDA fault the child reported failed twice; a suite resumed at the check that crashed (an
// endless loop) or after the last; a crash outside any check passing silently or resuming; a
// resumed process numbering its checks from 0, or running the checks its predecessor ran; a
// signal reported as an exit; incidents missing from a report format; a hung child waited for
// forever, or a slow one that makes progress killed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "check_result_json.h"
#include "child_outcome.h"
#include "child_process.h"
#include "cuda_fault.h"
#include "json_report.h"
#include "junit_xml.h"
#include "run_report.h"
#include "suite_child.h"
#include "suite_journal.h"

namespace kvc::runner {
namespace {

const SuiteRef kMatrix{kKernelSide, kSuiteMatrix};

CheckResult kernel_check(const std::string& name) {
  CheckResult c = make_check(kKernelSide, kSuiteMatrix, "kv_only", "packed584", name);
  c.add_bytes(AbiOp::kKvOnly, 1000);
  return c;
}

// A journal of `total` checks in which checks [first, first + done) finished and passed.
std::string journal_text(std::size_t total, std::size_t first, std::size_t done) {
  std::string s =
      "begin {\"suite\": \"kernel:matrix\", \"title\": \"kernel matrix: t\", \"checks\": " + std::to_string(total) +
      "}\n";
  for (std::size_t i = first; i < first + done; ++i) {
    const CheckResult c = kernel_check("C" + std::to_string(i));
    s += "started {\"index\": " + std::to_string(i) +
         ", \"where\": \"kernel\", \"suite\": \"matrix\", \"op\": \"kv_only\", \"format\": \"packed584\", \"name\": "
         "\"C" +
         std::to_string(i) + "\"}\n";
    s += "result {\"index\": " + std::to_string(i) + ", \"check\": " + check_result_to_json(c).dump() + "}\n";
  }
  return s;
}

std::string started_line(std::size_t i) {
  return "started {\"index\": " + std::to_string(i) +
         ", \"where\": \"kernel\", \"suite\": \"matrix\", \"op\": \"kv_only\", \"format\": \"packed584\", \"name\": "
         "\"C" +
         std::to_string(i) + "\"}\n";
}

ProcessEnd signalled(int signal) {
  ProcessEnd e;
  e.kind = ProcessEndKind::kSignalled;
  e.code = signal;
  return e;
}

ProcessEnd exited(int code) {
  ProcessEnd e;
  e.kind = ProcessEndKind::kExited;
  e.code = code;
  return e;
}

// Defect: a field of the check lost on its way from the child's journal to the report.
TEST(CheckResultJson, EveryFieldSurvivesTheRoundTrip) {
  CheckResult c = make_check(kKernelSide, kSuiteDspark, "kv_only+legacy", "fp8_512", "UpstreamDspark_X");
  c.verdict = Verdict::kFailed;
  c.message = "line one\nline two \xff";
  c.seconds = 1.25;
  c.add_bytes(AbiOp::kKvOnly, 123);
  c.add_bytes(AbiOp::kLegacy, 0);
  testkit::ClassifiedSite site;
  site.cls = testkit::MismatchClass::kPadByte;
  site.where = "slot 3";
  site.detail = "pad byte 0x01";
  site.bytes = 1;
  site.first_offset = 583;
  c.classes.add(site);
  c.classes.mismatching_bytes = 1;
  c.rsqrt.rows_checked = 17;
  c.rsqrt.rows_moved = 2;
  c.rsqrt.max_ulps = 1;
  const CheckResult back = check_result_from_json(
      nlohmann::json::parse(check_result_to_json(c).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  EXPECT_EQ(back.side, c.side);
  EXPECT_EQ(back.suite, c.suite);
  EXPECT_EQ(back.op, c.op);
  EXPECT_EQ(back.format, c.format);
  EXPECT_EQ(back.name, c.name);
  EXPECT_EQ(back.verdict, Verdict::kFailed);
  EXPECT_EQ(back.seconds, 1.25);
  EXPECT_EQ(back.bytes_by_op, c.bytes_by_op) << "an op called with 0 bytes compared still counts as called";
  EXPECT_EQ(back.classes.to_json(), c.classes.to_json());
  EXPECT_EQ(back.classes.report(), c.classes.report());
  EXPECT_EQ(back.rsqrt.rows_checked, 17);
  EXPECT_EQ(back.rsqrt.rows_moved, 2);
  EXPECT_EQ(back.rsqrt.max_ulps, 1);
  // The message went through the JSON's replacement of invalid UTF-8, as the report's JSON does.
  EXPECT_EQ(back.message.substr(0, 18), "line one\nline two ");

  CheckResult skipped = make_check(kOracleSide, kSuiteGolden, "kv_only", "packed584", "f");
  skip(skipped, "the reason");
  const CheckResult s = check_result_from_json(check_result_to_json(skipped));
  EXPECT_EQ(s.verdict, Verdict::kSkipped);
  EXPECT_EQ(s.message, "the reason");
  EXPECT_TRUE(s.bytes_by_op.empty()) << "oracle checks compare no kernel byte";
  EXPECT_THROW(check_result_from_json({{"where", "kernel"}}), std::invalid_argument);
}

// Defect: a line cut short by the end of the process read as an event (or the whole file dropped).
TEST(SuiteJournal, ReadsEveryWholeLineAndCountsACutOne) {
  std::string text = journal_text(5, 0, 2) + started_line(2);
  text += "result {\"index\": 2, \"check\": {\"where\": \"ker";  // the process died mid-write
  const SuiteJournal j = parse_suite_journal(text);
  EXPECT_TRUE(j.begun);
  EXPECT_EQ(j.title, "kernel matrix: t");
  EXPECT_EQ(j.checks, 5u);
  EXPECT_EQ(j.started.size(), 3u);
  EXPECT_EQ(j.results.size(), 2u);
  EXPECT_EQ(j.unreadable_lines, 1u);
  EXPECT_FALSE(j.complete);
  ASSERT_TRUE(j.unfinished());
  EXPECT_EQ(j.unfinished()->first, 2u);
  EXPECT_EQ(j.unfinished()->second.name, "C2");
  EXPECT_FALSE(parse_suite_journal(journal_text(2, 0, 2) + "end {}\n").unfinished());
  EXPECT_TRUE(parse_suite_journal(journal_text(2, 0, 2) + "end {}\n").complete);
  EXPECT_FALSE(read_suite_journal("/nonexistent/journal").begun) << "no file: the process never began";
}

// Defect: the writer's lines not what the reader reads (a tag, the stopped check).
TEST(SuiteJournal, WhatTheWriterWritesTheReaderReads) {
  const std::string path = ::testing::TempDir() + "kvc-suite-journal-test";
  {
    JournalWriter w(path);
    w.begin(kMatrix, "kernel matrix: title", 3);
    w.started(0, kernel_check("A"));
    w.result(0, kernel_check("A"));
    w.started(1, kernel_check("B"));
    CheckResult failed = kernel_check("B");
    fail(failed, "CUDA fault: cudaErrorIllegalAddress: an illegal memory access was encountered");
    w.result(1, failed);
    w.stopped("CUDA fault: cudaErrorIllegalAddress: an illegal memory access was encountered", 1);
  }
  const SuiteJournal j = read_suite_journal(path);
  EXPECT_EQ(j.checks, 3u);
  ASSERT_EQ(j.results.size(), 2u);
  EXPECT_EQ(j.results[1].second.verdict, Verdict::kFailed);
  ASSERT_TRUE(j.stopped);
  EXPECT_EQ(j.stopped->check, std::optional<std::size_t>(1));
  EXPECT_EQ(j.unreadable_lines, 0u);
  EXPECT_THROW(JournalWriter("/nonexistent/folder/journal"), std::runtime_error);
}

// Defect: a finished suite reported as anything but its results.
TEST(ChildOutcome, AFinishedSuiteIsItsResults) {
  const ChildOutcome o = child_outcome(kMatrix, 0, parse_suite_journal(journal_text(3, 0, 3) + "end {}\n"), exited(0));
  EXPECT_EQ(o.checks.size(), 3u);
  EXPECT_FALSE(o.last_made_here);
  EXPECT_FALSE(o.resume_at);
  EXPECT_TRUE(o.incident.empty());
  // Ran to its end, then crashed on the way out: said, not failed.
  const ChildOutcome late =
      child_outcome(kMatrix, 0, parse_suite_journal(journal_text(3, 0, 3) + "end {}\n"), signalled(SIGSEGV));
  EXPECT_EQ(late.checks.size(), 3u);
  EXPECT_NE(late.incident.find("ran the suite to its end, then ended with killed by signal 11"), std::string::npos)
      << late.incident;
}

// Defect: the check a process died in not failed (or another one failed), or the suite not
// resumed right after it.
TEST(ChildOutcome, ACrashInACheckFailsItAndTheSuiteGoesOnAfterIt) {
  const SuiteJournal j = parse_suite_journal(journal_text(10, 4, 2) + started_line(6));
  const ChildOutcome o = child_outcome(kMatrix, 4, j, signalled(SIGSEGV));
  ASSERT_EQ(o.checks.size(), 3u);
  EXPECT_EQ(o.checks[0].verdict, Verdict::kPassed);
  EXPECT_EQ(o.checks[1].verdict, Verdict::kPassed);
  const CheckResult& crashed = o.checks[2];
  EXPECT_EQ(crashed.name, "C6");
  EXPECT_EQ(crashed.verdict, Verdict::kFailed);
  EXPECT_EQ(crashed.message, "the process running this check ended: killed by signal 11: Segmentation fault");
  EXPECT_EQ(crashed.bytes_by_op.count(AbiOp::kKvOnly), 1u) << "the coverage counts it against its op";
  EXPECT_TRUE(o.last_made_here);
  EXPECT_EQ(o.resume_at, std::optional<std::size_t>(7));
  EXPECT_EQ(o.incident,
            "kernel matrix: check [7/10] C6 ended its process (killed by signal 11: Segmentation fault); the suite "
            "went on in a new process from check [8/10]");
  // The same crash in the suite's last check: nothing to resume.
  const ChildOutcome last =
      child_outcome(kMatrix, 9, parse_suite_journal(journal_text(10, 9, 0) + started_line(9)), exited(3));
  EXPECT_FALSE(last.resume_at);
  EXPECT_EQ(last.checks.back().message, "the process running this check ended: exit status 3");
  EXPECT_NE(last.incident.find("check [10/10] C9, its last, ended its process (exit status 3)"), std::string::npos)
      << last.incident;
}

// Defect: a CUDA fault the process reported itself failed a second time, or the suite stopped.
TEST(ChildOutcome, ACudaFaultTheProcessReportedResumesAfterIt) {
  CheckResult faulted = kernel_check("C2");
  fail(faulted, "CUDA fault: cudaErrorIllegalAddress: an illegal memory access was encountered");
  const std::string text = journal_text(5, 0, 2) + started_line(2) +
                           "result {\"index\": 2, \"check\": " + check_result_to_json(faulted).dump() +
                           "}\nstopped {\"why\": \"CUDA fault: cudaErrorIllegalAddress: an illegal memory access was "
                           "encountered\", \"check\": 2}\n";
  const ChildOutcome o = child_outcome(kMatrix, 0, parse_suite_journal(text), exited(1));
  ASSERT_EQ(o.checks.size(), 3u);
  EXPECT_EQ(o.checks[2].message, faulted.message);
  EXPECT_FALSE(o.last_made_here);
  EXPECT_EQ(o.resume_at, std::optional<std::size_t>(3));
  EXPECT_EQ(o.incident,
            "kernel matrix: check [3/5] C2 ended its process (CUDA fault: cudaErrorIllegalAddress: an illegal memory "
            "access was encountered); the suite went on in a new process from check [4/5]");
}

// Defect: a process that died outside any check passing silently, or resumed (it would die
// there again), or a wrong count of checks not run.
TEST(ChildOutcome, ACrashOutsideAnyCheckEndsTheSuiteEarly) {
  const ChildOutcome between =
      child_outcome(kMatrix, 3, parse_suite_journal(journal_text(10, 3, 2)), signalled(SIGABRT));
  EXPECT_FALSE(between.resume_at);
  ASSERT_EQ(between.checks.size(), 3u);
  EXPECT_EQ(between.checks.back().name, kProcessCheckName);
  EXPECT_EQ(between.checks.back().verdict, Verdict::kFailed);
  EXPECT_EQ(between.checks.back().suite, "matrix");
  EXPECT_EQ(between.incident, "suite kernel matrix ended early: 5 checks not run (killed by signal 6: Aborted)");

  const ChildOutcome before = child_outcome(kMatrix, 0, parse_suite_journal(""), exited(2));
  ASSERT_EQ(before.checks.size(), 1u);
  EXPECT_EQ(before.checks[0].verdict, Verdict::kFailed);
  EXPECT_EQ(before.incident,
            "suite kernel matrix ended early: it ended before it announced its checks (exit status 2)");

  // An exception in the suite's setup, which the process reported itself.
  const ChildOutcome stopped = child_outcome(
      kMatrix, 0, parse_suite_journal(journal_text(4, 0, 0) + "stopped {\"why\": \"an exception: no fixtures\"}\n"),
      exited(1));
  EXPECT_EQ(stopped.incident, "suite kernel matrix ended early: 4 checks not run (an exception: no fixtures)");
  EXPECT_NE(stopped.checks.back().message.find("an exception: no fixtures"), std::string::npos);
}

// Defect: incidents said in one report format and lost in another.
TEST(ChildOutcome, IncidentsReachEveryReport) {
  RunReport report;
  report.cpu_only = true;
  const ChildOutcome o =
      child_outcome(kMatrix, 0, parse_suite_journal(journal_text(3, 0, 1) + started_line(1)), signalled(SIGSEGV));
  report.checks = o.checks;
  report.incidents.push_back(o.incident);
  EXPECT_EQ(report.exit_code(), kRunFailed) << "a crash is a failure";
  EXPECT_NE(report.summary().find("incidents (every suite runs in a process of its own):\n  " + o.incident),
            std::string::npos);
  EXPECT_EQ(run_to_json(report).at("incidents"), nlohmann::json::array({o.incident}));
  EXPECT_NE(junit_xml(report).find("name=\"incident.1\""), std::string::npos);
  EXPECT_EQ(run_to_json(RunReport{}).at("incidents"), nlohmann::json::array());
}

// Defect: the first line of a faulted check not the fault's name and text.
TEST(CudaFault, TheLineNamesTheErrorAndItsText) {
  EXPECT_EQ(cuda_fault_line({"cudaErrorIllegalAddress", "an illegal memory access was encountered"}),
            "CUDA fault: cudaErrorIllegalAddress: an illegal memory access was encountered");
}

// Defect: a signal reported as an exit status, or an exit status lost.
TEST(ChildProcess, AForkedBodyEndsWithItsStatusOrItsSignal) {
  const ProcessEnd ok = run_forked([] { return 7; });
  EXPECT_EQ(ok.kind, ProcessEndKind::kExited);
  EXPECT_EQ(ok.code, 7);
  EXPECT_EQ(ok.describe(), "exit status 7");
  const ProcessEnd aborted = run_forked([]() -> int { std::abort(); });
  EXPECT_EQ(aborted.kind, ProcessEndKind::kSignalled);
  EXPECT_EQ(aborted.code, SIGABRT);
  EXPECT_EQ(aborted.describe(), "killed by signal 6: Aborted");
  const ProcessEnd missing = run_child_process("/nonexistent/program", {});
  EXPECT_TRUE(missing.kind == ProcessEndKind::kNotStarted ||
              (missing.kind == ProcessEndKind::kExited && missing.code == 127))
      << missing.describe();
}

// The hung-check watchdog: a child whose journal stops growing for the limit is killed and said to
// be; one that keeps writing runs on past the limit. Defect: a hung child waited for forever; a
// slow but progressing one killed; a timed-out end described as a signal or an exit.
TEST(ChildProcess, AChildThatStopsWritingItsJournalIsKilledOneThatWritesRunsOn) {
  const std::string journal = ::testing::TempDir() + "watchdog-journal";
  std::remove(journal.c_str());
  const auto appender = [&journal](int lines, int ms_between) {
    return [&journal, lines, ms_between] {
      for (int i = 0; i < lines; ++i) {
        std::ofstream(journal, std::ios::app) << "started {}\n";
        usleep(static_cast<useconds_t>(ms_between) * 1000);
      }
      return 0;
    };
  };
  // Six lines 300 ms apart (1.8 s) under a 1 s limit: progress all along, never killed.
  const ProcessEnd progressing = run_forked(appender(6, 300), ProgressWatch{journal, 1.0});
  EXPECT_EQ(progressing.kind, ProcessEndKind::kExited) << progressing.describe();
  EXPECT_EQ(progressing.code, 0);
  // One line, then nothing for ten minutes: killed after about a second.
  std::remove(journal.c_str());
  const auto start = std::chrono::steady_clock::now();
  const ProcessEnd hung = run_forked(appender(1, 600000), ProgressWatch{journal, 1.0});
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(hung.kind, ProcessEndKind::kTimedOut);
  EXPECT_EQ(hung.describe(), "killed after 1 s without progress (--check-timeout 1)");
  EXPECT_LT(waited, 30.0) << "the watchdog did not kill the child";
  // Without a limit the same child would be waited for: not tested (it would take ten minutes).
  std::remove(journal.c_str());
}

// Defect: a hung check reported as a crash (or not at all), or the suite not resumed after it.
TEST(ChildOutcome, AHungCheckIsFailedAsHungAndTheSuiteGoesOnAfterIt) {
  ProcessEnd timed_out;
  timed_out.kind = ProcessEndKind::kTimedOut;
  timed_out.code = 300;
  const ChildOutcome o =
      child_outcome(kMatrix, 0, parse_suite_journal(journal_text(10, 0, 3) + started_line(3)), timed_out);
  ASSERT_EQ(o.checks.size(), 4u);
  EXPECT_EQ(o.checks[3].verdict, Verdict::kFailed);
  EXPECT_EQ(o.checks[3].message,
            "HUNG: no result within the check time limit; killed after 300 s without progress (--check-timeout 300)");
  EXPECT_EQ(o.resume_at, std::optional<std::size_t>(4));
}

// The "started" bookkeeping: a process resumed at check K numbers the checks as the first did,
// leaves out (and journals nothing for) the checks before K, and journals "started" before each
// result. Defect: a resumed process numbering from 0 (the parent would resume at the wrong
// check), running the checks its predecessor ran, or a result without its "started".
TEST(SuiteChild, AResumedProcessGoesOnWithTheSameNumbering) {
  RunOptions options;
  options.formats = {RecordFormat::kPacked584};
  const SuiteRef checker{kOracleSide, kSuiteChecker};
  const std::string whole = ::testing::TempDir() + "kvc-suite-child-whole", resumed = whole + "-resumed";
  // In forked processes, as the run makes them (the suite's progress lines go to this test's log).
  ASSERT_TRUE(run_forked([&] { return run_child_suite({checker, whole, 0}, options); }).exited_zero());
  ASSERT_TRUE(run_forked([&] { return run_child_suite({checker, resumed, 3}, options); }).exited_zero());
  const SuiteJournal a = read_suite_journal(whole), b = read_suite_journal(resumed);
  ASSERT_TRUE(a.complete);
  ASSERT_TRUE(b.complete);
  ASSERT_GT(a.checks, 3u);
  EXPECT_EQ(b.checks, a.checks);
  ASSERT_EQ(a.results.size(), a.checks);
  ASSERT_EQ(b.results.size(), a.checks - 3);
  ASSERT_EQ(b.started.size(), b.results.size());
  for (std::size_t i = 0; i < b.results.size(); ++i) {
    EXPECT_EQ(b.started[i].first, i + 3);
    EXPECT_EQ(b.results[i].first, i + 3);
    EXPECT_EQ(b.started[i].second.name, b.results[i].second.name);
    EXPECT_EQ(b.results[i].second.name, a.results[i + 3].second.name);
    EXPECT_EQ(b.results[i].second.verdict, Verdict::kPassed);
  }
  EXPECT_EQ(a.results[0].second.suite, "checker");
  EXPECT_EQ(a.results[0].second.side, "oracle");
}

}  // namespace
}  // namespace kvc::runner
