// run_report.cpp: results, the summary table and the exit status (see run_report.h).
#include "run_report.h"

#include <cstdio>
#include <sstream>

namespace kvc::runner {

CheckResult make_check(const char* side, const char* suite, std::string op, std::string format, std::string name) {
  CheckResult r;
  r.side = side;
  r.suite = suite;
  r.op = std::move(op);
  r.format = std::move(format);
  r.name = std::move(name);
  return r;
}

void fail(CheckResult& r, const std::string& message) {
  r.verdict = Verdict::kFailed;
  if (!r.message.empty()) r.message += "\n";
  r.message += message;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPassed: return "passed";
    case Verdict::kFailed: return "failed";
    case Verdict::kSkipped: return "skipped";
  }
  return "?";
}

std::int64_t RunReport::count(Verdict v) const {
  std::int64_t n = 0;
  for (const CheckResult& c : checks) n += c.verdict == v;
  return n;
}

std::vector<std::pair<std::tuple<std::string, std::string, std::string, std::string>, GroupCounts>> RunReport::groups()
    const {
  std::vector<std::pair<std::tuple<std::string, std::string, std::string, std::string>, GroupCounts>> out;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::size_t> index;
  for (const CheckResult& c : checks) {
    const auto key = std::make_tuple(c.side, c.suite, c.op, c.format);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      out.push_back({key, {}});
    }
    GroupCounts& g = out[it->second].second;
    g.seconds += c.seconds;
    switch (c.verdict) {
      case Verdict::kPassed: ++g.passed; break;
      case Verdict::kFailed: ++g.failed; break;
      case Verdict::kSkipped:
        ++g.skipped;
        ++g.skip_reasons[c.message];
        break;
    }
  }
  return out;
}

testkit::MismatchClassification RunReport::classes() const {
  testkit::MismatchClassification all;
  for (const CheckResult& c : checks)
    if (c.verdict == Verdict::kFailed) all.merge(c.classes);
  return all;
}

int RunReport::exit_code() const {
  if (count(Verdict::kFailed) > 0) return kRunFailed;
  if (!kernels_ran && !cpu_only) return kRunKernelsSkipped;
  return kRunPassed;
}

std::string RunReport::summary() const {
  std::ostringstream s;
  char line[256];
  s << "summary (op x format)\n";
  std::snprintf(line, sizeof line, "  %-7s %-9s %-15s %-10s %7s %7s %8s %9s\n", "where", "suite", "op", "format",
                "passed", "failed", "skipped", "seconds");
  s << line;
  const auto all = groups();
  for (const auto& [key, g] : all) {
    const auto& [side, suite, op, format] = key;
    std::snprintf(line, sizeof line, "  %-7s %-9s %-15s %-10s %7lld %7lld %8lld %9.1f%s\n", side.c_str(), suite.c_str(),
                  op.c_str(), format.c_str(), static_cast<long long>(g.passed), static_cast<long long>(g.failed),
                  static_cast<long long>(g.skipped), g.seconds, g.failed > 0 ? "  FAILED" : "");
    s << line;
  }
  bool any_skip = false;
  for (const auto& [key, g] : all) {
    for (const auto& [reason, n] : g.skip_reasons) {
      if (!any_skip) s << "skipped, with reasons:\n";
      any_skip = true;
      const auto& [side, suite, op, format] = key;
      s << "  " << side << " " << suite << " " << op << " " << format << ": " << n << " x " << reason << "\n";
    }
  }
  const testkit::MismatchClassification classes_all = classes();
  if (!classes_all.empty()) s << "mismatch classes over all failed checks:\n" << classes_all.report();

  const std::int64_t passed = count(Verdict::kPassed), failed = count(Verdict::kFailed),
                     skipped = count(Verdict::kSkipped);
  s << "\n";
  if (!kernels_ran) {
    s << "########################################################################\n"
      << "## KERNEL CONFORMANCE SKIPPED: " << kernels_skipped_reason << "\n"
      << "## Only the CPU conformance of the oracle ran"
      << (cpu_only ? " (--cpu-only)." : "; this is not a kernel conformance result.") << "\n"
      << "########################################################################\n";
  }
  std::snprintf(line, sizeof line, "%s: %lld checks, %lld passed, %lld failed, %lld skipped, %.1f s\n",
                exit_code() == kRunPassed ? "PASSED" : (failed > 0 ? "FAILED" : "INCOMPLETE"),
                static_cast<long long>(passed + failed + skipped), static_cast<long long>(passed),
                static_cast<long long>(failed), static_cast<long long>(skipped), seconds);
  s << line;
  return s.str();
}

}  // namespace kvc::runner
