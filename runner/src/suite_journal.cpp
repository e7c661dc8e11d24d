// suite_journal.cpp: see suite_journal.h.
#include "suite_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "check_result_json.h"

namespace kvc::runner {
namespace {

constexpr std::string_view kBegin = "begin", kStarted = "started", kResult = "result", kStopped = "stopped",
                           kEnd = "end";

}  // namespace

std::optional<std::pair<std::size_t, CheckResult>> SuiteJournal::unfinished() const {
  if (started.empty()) return std::nullopt;
  const std::size_t last = started.back().first;
  for (const auto& [index, check] : results)
    if (index == last) return std::nullopt;
  return started.back();
}

SuiteJournal parse_suite_journal(std::string_view text) {
  SuiteJournal j;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t eol = text.find('\n', at);
    const bool cut = eol == std::string_view::npos;  // no newline: the process ended mid-line
    if (cut) eol = text.size();
    const std::string_view line = text.substr(at, eol - at);
    at = eol + 1;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    const std::string_view tag = line.substr(0, space);
    const nlohmann::json body = space == std::string_view::npos
                                    ? nlohmann::json()
                                    : nlohmann::json::parse(line.substr(space + 1), nullptr, false);
    if (cut || body.is_discarded() || !body.is_object()) {
      ++j.unreadable_lines;
      continue;
    }
    try {
      if (tag == kBegin) {
        j.begun = true;
        j.title = body.at("title").get<std::string>();
        j.checks = body.at("checks").get<std::size_t>();
      } else if (tag == kStarted) {
        CheckResult c;
        c.side = body.at("where").get<std::string>();
        c.suite = body.at("suite").get<std::string>();
        c.op = body.at("op").get<std::string>();
        c.format = body.at("format").get<std::string>();
        c.name = body.at("name").get<std::string>();
        j.started.emplace_back(body.at("index").get<std::size_t>(), std::move(c));
      } else if (tag == kResult) {
        j.results.emplace_back(body.at("index").get<std::size_t>(), check_result_from_json(body.at("check")));
      } else if (tag == kStopped) {
        JournalStop stop{body.at("why").get<std::string>(), std::nullopt};
        if (body.contains("check")) stop.check = body.at("check").get<std::size_t>();
        j.stopped = stop;
      } else if (tag == kEnd) {
        j.complete = true;
      } else {
        ++j.unreadable_lines;
      }
    } catch (const std::exception&) {
      ++j.unreadable_lines;
    }
  }
  return j;
}

SuiteJournal read_suite_journal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return parse_suite_journal(s.str());
}

JournalWriter::JournalWriter(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create the suite journal " + path + ": " + std::strerror(errno));
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::begin(const SuiteRef& suite, const std::string& title, std::size_t checks) {
  line(kBegin, {{"suite", suite.key()}, {"title", title}, {"checks", checks}});
}

void JournalWriter::started(std::size_t index, const CheckResult& check) {
  line(kStarted, {{"index", index},
                  {"where", check.side},
                  {"suite", check.suite},
                  {"op", check.op},
                  {"format", check.format},
                  {"name", check.name}});
}

void JournalWriter::result(std::size_t index, const CheckResult& check) {
  line(kResult, {{"index", index}, {"check", check_result_to_json(check)}});
}

void JournalWriter::stopped(const std::string& why, std::optional<std::size_t> check) {
  nlohmann::json body = {{"why", why}};
  if (check) body["check"] = *check;
  line(kStopped, body);
}

void JournalWriter::end() { line(kEnd, nlohmann::json::object()); }

void JournalWriter::line(std::string_view tag, const nlohmann::json& body) {
  // One write per line (O_APPEND): a process that dies leaves whole lines, or a last one cut short
  // that the reader counts as unreadable. Messages hold arbitrary bytes: replaced, never thrown on.
  const std::string text =
      std::string(tag) + " " + body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("writing the suite journal failed: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace kvc::runner
