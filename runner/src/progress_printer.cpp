// progress_printer.cpp: see progress_printer.h.
#include "progress_printer.h"

#include <cstdio>

namespace kvc::runner {
namespace {

// A progress line at least this often on long suites, whatever finishes.
constexpr double kProgressIntervalSeconds = 5.0;
// Checks at least this long get a line of their own.
constexpr double kSlowCheckSeconds = 1.0;

std::string indent(const std::string& text) {
  std::string out = "      ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "      ";
  }
  while (!out.empty() && (out.back() == ' ')) out.pop_back();
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

}  // namespace

void ProgressPrinter::begin_suite(const std::string& title, std::size_t checks, std::size_t first_check) {
  total_ = checks;
  done_ = first_check;
  since_print_ = Stopwatch();
  if (first_check == 0) std::printf("\n== %s (%zu checks)\n", title.c_str(), checks);
  std::fflush(stdout);
}

void ProgressPrinter::check(const CheckResult& r) {
  ++done_;
  if (r.verdict == Verdict::kFailed || r.seconds >= kSlowCheckSeconds ||
      since_print_.seconds() >= kProgressIntervalSeconds || done_ == total_) {
    print_check_line(r, done_, total_);
    since_print_ = Stopwatch();
  }
}

void print_check_line(const CheckResult& r, std::size_t number, std::size_t total) {
  char counter[48] = "";
  if (total > 0) std::snprintf(counter, sizeof counter, "[%4zu/%4zu] ", number, total);
  std::printf("  %s%s %s %s %s: %s (%.2f s)\n", counter, r.side.c_str(), r.suite.c_str(), r.format.c_str(),
              r.name.c_str(), std::string(verdict_name(r.verdict)).c_str(), r.seconds);
  if (r.verdict == Verdict::kFailed) {
    std::printf("%s", indent(r.message).c_str());
    if (!r.classes.empty()) std::printf("%s", r.classes.report().c_str());
  }
  std::fflush(stdout);
}

void print_suite_counts(std::int64_t passed, std::int64_t failed, std::int64_t skipped, double seconds) {
  std::printf("  %lld passed, %lld failed, %lld skipped (%.1f s)\n", static_cast<long long>(passed),
              static_cast<long long>(failed), static_cast<long long>(skipped), seconds);
  std::fflush(stdout);
}

}  // namespace kvc::runner
