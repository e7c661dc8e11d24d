// progress_printer.h: the lines `kvconform run` prints while a suite runs.
//
//   == <suite title> (<n> checks)
//     [done/total] <kernel|oracle> <suite> <format> <name>: <verdict> (<seconds> s)
//         <the report of a failed check, and its mismatch classes>
//     <p> passed, <f> failed, <s> skipped (<seconds> s)
//
// A check gets its line when it failed, took a second or more, is the suite's last, or comes after
// a few quiet seconds. The process running the suite (suite_child.h) prints the header and the
// check lines as checks finish; the run's process, which merges what every process of the suite
// found (suite_children.h), prints the counts, and the line of a check whose process died in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "run_report.h"
#include "stopwatch.h"

namespace kvc::runner {

class ProgressPrinter {
 public:
  // first_check > 0: a process resumed after a check that ended the last one: the header was
  // printed then, and the numbering goes on from first_check.
  void begin_suite(const std::string& title, std::size_t checks, std::size_t first_check);
  // Counts the check and prints its line when due.
  void check(const CheckResult& r);

 private:
  std::size_t total_ = 0, done_ = 0;
  Stopwatch since_print_;
};

// The line of check number `number` of `total` ("[  12/ 368]"; no counter when total is 0), with
// the report of a failure.
void print_check_line(const CheckResult& r, std::size_t number, std::size_t total);

// "  <p> passed, <f> failed, <s> skipped (<seconds> s)"
void print_suite_counts(std::int64_t passed, std::int64_t failed, std::int64_t skipped, double seconds);

}  // namespace kvc::runner
