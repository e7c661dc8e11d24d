// suite_children.cpp: see suite_children.h.
#include "suite_children.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "child_outcome.h"
#include "child_process.h"
#include "progress_printer.h"
#include "stopwatch.h"
#include "suite_child.h"
#include "suite_journal.h"

namespace kvc::runner {

SuiteChildren::SuiteChildren(std::string program, std::vector<std::string> run_args, RunOptions options)
    : program_(std::move(program)), run_args_(std::move(run_args)), options_(std::move(options)) {
  if (program_.empty()) throw std::runtime_error("cannot find this executable (/proc/self/exe) to run the suites");
  std::string pattern = (std::filesystem::temp_directory_path() / "kvconform-run-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot create a folder for the suites' journals: " + pattern);
  folder_ = pattern;
}

SuiteChildren::~SuiteChildren() {
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

void SuiteChildren::run(const SuiteRef& suite, RunReport& report) {
  const Stopwatch clock;
  std::int64_t passed = 0, failed = 0, skipped = 0;
  std::size_t first = 0;
  for (;;) {
    const std::string journal = folder_ + "/" + std::to_string(started_++) + "-" + suite.side + "-" + suite.name;
    ProcessEnd end;
    const ProgressWatch watch{journal, options_.check_timeout_seconds};
    if (suite.side == kKernelSide) {
      std::vector<std::string> args = run_args_;
      args.insert(args.end(), {"--child-suite", suite.key(), "--child-journal", journal, "--child-first-check",
                               std::to_string(first)});
      end = run_child_process(program_, args, watch);
    } else {
      end = run_forked(
          [&] {
            try {
              return run_child_suite({suite, journal, first}, options_);
            } catch (const std::exception& e) {
              std::fprintf(stderr, "kvconform run: %s\n", e.what());
              return kRunUsage;
            }
          },
          watch);
    }
    const ChildOutcome o = child_outcome(suite, first, read_suite_journal(journal), end);
    if (o.last_made_here)
      print_check_line(o.checks.back(), first + o.checks.size(),
                       o.checks.back().name == kProcessCheckName ? 0 : o.total);
    if (!o.incident.empty()) {
      std::printf("  -- %s\n", o.incident.c_str());
      report.incidents.push_back(o.incident);
    }
    for (const CheckResult& c : o.checks) {
      passed += c.verdict == Verdict::kPassed;
      failed += c.verdict == Verdict::kFailed;
      skipped += c.verdict == Verdict::kSkipped;
      report.checks.push_back(c);
    }
    if (!o.resume_at) break;
    first = *o.resume_at;
  }
  print_suite_counts(passed, failed, skipped, clock.seconds());
}

}  // namespace kvc::runner
