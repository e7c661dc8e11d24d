// suite_journal.h: what the process running one suite writes as it goes, for the run to read back.
//
// One line per event, a tag and a JSON object, each written with one write(2) before the next step,
// so that the file says how far the process got however it ends (a signal, abort(), a CUDA fault):
//
//   begin {"suite": "kernel:matrix", "title": "kernel matrix: ...", "checks": 368}
//   started {"index": 12, "where": "kernel", "suite": "matrix", "op": "kv_only", "format": ..., "name": ...}
//   result {"index": 12, "check": {...one check, check_result_json.h...}}
//   stopped {"why": "CUDA fault: ...", "check": 12}   the process ended the suite itself, having
//                                          recorded check 12, which was running, as failed ("check"
//                                          absent: no check was running)
//   end {}                                 the suite ran to its end
//
// Indices count every check the suite makes, from 0, in its order. A process resumed after check
// k (suite_children.h) writes its own journal: begin, then started and result from k + 1 on. A
// "started" without its "result" is the check that was running when the process ended.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_report.h"
#include "suite_plan.h"

namespace kvc::runner {

// The process stopped the suite itself: why, and the check it failed for it, if one was running.
struct JournalStop {
  std::string why;
  std::optional<std::size_t> check;
};

struct SuiteJournal {
  bool begun = false;
  std::string title;
  std::size_t checks = 0;  // as the suite announced them
  // The checks started, as made (side, suite, op, format, name; passed until said otherwise).
  std::vector<std::pair<std::size_t, CheckResult>> started;
  std::vector<std::pair<std::size_t, CheckResult>> results;
  std::optional<JournalStop> stopped;
  bool complete = false;             // "end": the suite ran to its end
  std::size_t unreadable_lines = 0;  // a last line cut short by the end of the process

  // The check that was running when the process ended: the last started without a result.
  std::optional<std::pair<std::size_t, CheckResult>> unfinished() const;
};

SuiteJournal parse_suite_journal(std::string_view text);
// An unreadable or missing file is an empty journal (the process ended before it wrote one).
SuiteJournal read_suite_journal(const std::string& path);

// Appends the lines above to a new file.
class JournalWriter {
 public:
  // Throws std::runtime_error when the file cannot be created.
  explicit JournalWriter(const std::string& path);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  void begin(const SuiteRef& suite, const std::string& title, std::size_t checks);
  void started(std::size_t index, const CheckResult& check);
  void result(std::size_t index, const CheckResult& check);
  void stopped(const std::string& why, std::optional<std::size_t> check);
  void end();

 private:
  void line(std::string_view tag, const nlohmann::json& body);
  int fd_ = -1;
};

}  // namespace kvc::runner
