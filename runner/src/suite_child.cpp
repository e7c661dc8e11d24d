// suite_child.cpp: see suite_child.h.
#include "suite_child.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <utility>

#include "child_outcome.h"
#include "cuda_fault.h"
#include "kernel_suites.h"
#include "oracle_suites.h"
#include "progress_printer.h"
#include "stopwatch.h"
#include "suite_journal.h"

namespace kvc::runner {
namespace {

enum class PlantedCrash : std::uint8_t { kAbortInCheck, kThrowInCheck, kAbortBetweenChecks, kHangInCheck };

struct PlantedCrashAt {
  SuiteRef suite;
  std::size_t index = 0;
  PlantedCrash how = PlantedCrash::kAbortInCheck;
};

// KVC_RUN_TEST_CHILD_CRASH=<side>:<suite>:<index>:<how>; unset or malformed: none (a typo must not
// crash a user's run, and no user sets it).
std::optional<PlantedCrashAt> planted_crash() {
  const char* value = std::getenv(kPlantedChildCrashEnv);
  if (value == nullptr) return std::nullopt;
  const std::string spec = value;
  const std::size_t a = spec.find(':'), b = spec.find(':', a + 1), c = spec.find(':', b + 1);
  if (a == std::string::npos || b == std::string::npos || c == std::string::npos) return std::nullopt;
  const std::optional<SuiteRef> suite = suite_from_key(spec.substr(0, b));
  const std::string index = spec.substr(b + 1, c - b - 1), how = spec.substr(c + 1);
  if (!suite || index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  PlantedCrashAt at{*suite, static_cast<std::size_t>(std::stoull(index)), PlantedCrash::kAbortInCheck};
  if (how == "throw")
    at.how = PlantedCrash::kThrowInCheck;
  else if (how == "abort-between")
    at.how = PlantedCrash::kAbortBetweenChecks;
  else if (how == "hang")
    at.how = PlantedCrash::kHangInCheck;
  else if (how != "abort")
    return std::nullopt;
  return at;
}

// Makes `line` the first line of a failed check's report (JUnit's failure message).
void fail_first(CheckResult& r, const std::string& line) {
  r.verdict = Verdict::kFailed;
  r.message = r.message.empty() ? line : line + "\n" + r.message;
}

// The suite's sink in this process: numbers the checks, leaves out those before first_check,
// journals and prints the rest, and ends the process when a check ended the context.
class ChildSink {
 public:
  ChildSink(const ChildSuiteOptions& child, JournalWriter& journal)
      : child_(child), journal_(journal), kernel_(child.suite.side == kKernelSide), planted_(planted_crash()) {
    if (planted_ && !(planted_->suite == child.suite)) planted_.reset();
  }

  RunSink sink() {
    RunSink s;
    s.begin_suite = [this](const std::string& title, std::size_t checks) {
      journal_.begin(child_.suite, title, checks);
      printer_.begin_suite(title, checks, child_.first_check);
    };
    s.start = [this](const CheckResult& r) { return start(r); };
    s.record = [this](CheckResult r) { record(std::move(r)); };
    return s;
  }

  // A check (or the suite around it) threw: fail the check that was running, if any, and end.
  [[noreturn]] void stop_after(const std::string& what) {
    const std::optional<CudaFault> fault = kernel_ ? sticky_cuda_fault() : std::nullopt;
    const std::string why = fault ? cuda_fault_line(*fault) : "an exception: " + what;
    if (!running_) {
      journal_.stopped(fault ? why + " (" + what + ")" : why, std::nullopt);
      end_process();
    }
    CheckResult r = running_->second;
    mark_ops_called(r);
    r.seconds = clock_.seconds();
    if (fault)
      fail(r, why + "\n  while " + what + "\n  the CUDA context is lost: the check ended its process");
    else
      fail(r, "the check ended its process with " + why);
    finish(std::move(r), why);
  }

 private:
  bool start(const CheckResult& r) {
    const std::size_t index = next_++;
    if (index < child_.first_check) return false;
    const bool planted_here = planted_ && planted_->index == index;
    if (planted_here && planted_->how == PlantedCrash::kAbortBetweenChecks) std::abort();
    journal_.started(index, r);
    running_ = {index, r};
    clock_ = Stopwatch();
    if (planted_here && planted_->how == PlantedCrash::kAbortInCheck) std::abort();
    if (planted_here && planted_->how == PlantedCrash::kHangInCheck)
      for (;;) pause();  // a kernel that never finishes: only the run's --check-timeout ends it
    if (planted_here && planted_->how == PlantedCrash::kThrowInCheck)
      throw std::runtime_error(std::string("planted by ") + kPlantedChildCrashEnv);
    return true;
  }

  void record(CheckResult r) {
    if (!running_) running_ = {next_++, r};  // a check recorded without start(): numbered here
    if (kernel_) {
      if (const std::optional<CudaFault> fault = sticky_cuda_fault()) {
        fail_first(r, cuda_fault_line(*fault) + " (found after the check: the CUDA context is lost)");
        finish(std::move(r), cuda_fault_line(*fault));
      }
    }
    journal_.result(running_->first, r);
    printer_.check(r);
    running_.reset();
  }

  // Records the check that ended the process and ends it.
  [[noreturn]] void finish(CheckResult r, const std::string& why) {
    const std::size_t index = running_->first;
    journal_.result(index, r);
    printer_.check(r);
    journal_.stopped(why, index);
    end_process();
  }

  // No destructor runs: after a CUDA fault, the runtime's and the library's teardown may fail or
  // hang on the lost context. Everything that matters is written (the journal line by line).
  [[noreturn]] static void end_process() {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kRunFailed);
  }

  const ChildSuiteOptions& child_;
  JournalWriter& journal_;
  const bool kernel_;
  std::optional<PlantedCrashAt> planted_;
  ProgressPrinter printer_;
  std::size_t next_ = 0;
  std::optional<std::pair<std::size_t, CheckResult>> running_;
  Stopwatch clock_;
};

}  // namespace

int run_child_suite(const ChildSuiteOptions& child, const RunOptions& options) {
  JournalWriter journal(child.journal);
  ChildSink sink(child, journal);
  // Outlives a fault: the library is not torn down on a lost context (the process ends in _Exit).
  std::optional<KernelSession> session;
  try {
    if (child.suite.side == kKernelSide) {
      session.emplace(options.kernels);
      session->run_suite(child.suite.name, options, sink.sink());
    } else {
      run_oracle_suite(child.suite.name, options, sink.sink());
    }
  } catch (const std::exception& e) {
    sink.stop_after(e.what());
  } catch (...) {
    sink.stop_after("an exception that is not a std::exception");
  }
  journal.end();
  return kRunPassed;
}

}  // namespace kvc::runner
