// run_report.cpp: results, the summary table, the coverage per ABI op and the verdict (see
// run_report.h).
#include "run_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace kvc::runner {
namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string s;
  for (const std::string& item : items) s += (s.empty() ? "" : separator) + item;
  return s;
}

// The coverage table: one line per op, and under it what the library declares.
void write_coverage(std::ostringstream& s, const std::vector<OpCoverage>& coverage) {
  char line[256];
  s << "kernel coverage per ABI op (bytes compared: what the library wrote that the checks compared)\n";
  std::snprintf(line, sizeof line, "  %-16s %-19s %7s %7s %7s %8s %16s  %s\n", "op", "entry point", "checks", "passed",
                "failed", "skipped", "bytes compared", "status");
  s << line;
  for (const OpCoverage& c : coverage) {
    std::snprintf(line, sizeof line, "  %-16s %-19s %7lld %7lld %7lld %8lld %16lld  %s\n",
                  std::string(abi_op_name(c.op)).c_str(), std::string(abi_op_symbol(c.op)).c_str(),
                  static_cast<long long>(c.checks), static_cast<long long>(c.passed), static_cast<long long>(c.failed),
                  static_cast<long long>(c.skipped), static_cast<long long>(c.bytes_compared),
                  std::string(op_status_name(c.status)).c_str());
    s << line;
    if (!c.declared) continue;
    const OpDeclaration& d = c.declaration;
    s << "      declared supported: " << (d.declared_supported() ? join(d.supported, " ") : "nothing");
    // The stacked op's entries name themselves ("stacked profile `contract` (per-layer, stacked)").
    if (!d.profiles.empty())
      s << (c.op == AbiOp::kStackedCtxKv ? " (" : " (profile ")
        << join(d.profiles, c.op == AbiOp::kStackedCtxKv ? "; " : ", ") << ")";
    if (d.approximate_rsqrt) s << " (approximate rsqrt)";
    if (d.exported == Export::kNotExported) s << "; " << abi_op_symbol(c.op) << " NOT EXPORTED";
    s << "\n";
  }
}

}  // namespace

std::int64_t CheckResult::bytes_compared() const {
  std::int64_t n = 0;
  for (const auto& entry : bytes_by_op) n += entry.second;
  return n;
}

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

void skip(CheckResult& r, const std::string& reason) {
  r.verdict = Verdict::kSkipped;
  r.message = reason;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPassed: return "passed";
    case Verdict::kFailed: return "failed";
    case Verdict::kSkipped: return "skipped";
  }
  return "?";
}

std::string_view run_verdict_name(RunVerdict v) {
  switch (v) {
    case RunVerdict::kPassed: return "passed";
    case RunVerdict::kFailed: return "failed";
    case RunVerdict::kKernelsSkipped: return "kernels_skipped";
    case RunVerdict::kNothingChecked: return "nothing_checked";
    case RunVerdict::kIncomplete: return "incomplete";
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

std::int64_t RunReport::kernel_bytes_compared() const {
  std::int64_t n = 0;
  for (const CheckResult& c : checks)
    if (c.side == kKernelSide) n += c.bytes_compared();
  return n;
}

std::vector<OpCoverage> RunReport::coverage() const {
  std::vector<OpCoverage> out;
  for (AbiOp op : kAllAbiOps) {
    OpCoverage c;
    c.op = op;
    for (const OpDeclaration& d : declarations)
      if (d.op == op) {
        c.declared = true;
        c.declaration = d;
      }
    c.selected = std::count(selected_ops.begin(), selected_ops.end(), op) > 0;
    c.suites_ran = kernel_suites_ran;
    for (const CheckResult& r : checks) {
      const auto it = r.bytes_by_op.find(op);
      if (r.side != kKernelSide || it == r.bytes_by_op.end()) continue;
      ++c.checks;
      c.passed += r.verdict == Verdict::kPassed;
      c.failed += r.verdict == Verdict::kFailed;
      c.skipped += r.verdict == Verdict::kSkipped;
      c.bytes_compared += it->second;
    }
    c.status = op_status(c);
    out.push_back(c);
  }
  return out;
}

std::vector<AbiOp> RunReport::uncovered_ops() const {
  std::vector<AbiOp> out;
  for (const OpCoverage& c : coverage())
    if (c.status == OpStatus::kUncovered) out.push_back(c.op);
  return out;
}

ApproxRsqrtTally RunReport::approx_rsqrt() const {
  ApproxRsqrtTally t;
  for (const CheckResult& c : checks) t.merge(c.rsqrt);
  return t;
}

RunVerdict RunReport::verdict() const {
  if (count(Verdict::kFailed) > 0) return RunVerdict::kFailed;
  if (cpu_only) return RunVerdict::kPassed;
  if (!kernel_suites_ran) return RunVerdict::kKernelsSkipped;
  if (kernel_bytes_compared() == 0) return RunVerdict::kNothingChecked;
  if (!uncovered_ops().empty()) return RunVerdict::kIncomplete;
  return RunVerdict::kPassed;
}

int RunReport::exit_code() const {
  switch (verdict()) {
    case RunVerdict::kPassed: return kRunPassed;
    case RunVerdict::kFailed: return kRunFailed;
    case RunVerdict::kKernelsSkipped: return kRunKernelsSkipped;
    case RunVerdict::kNothingChecked: return kRunNothingChecked;
    case RunVerdict::kIncomplete: return kRunIncomplete;
  }
  return kRunFailed;
}

std::string RunReport::summary() const {
  std::ostringstream s;
  char line[320];
  s << "summary (op x format)\n";
  std::snprintf(line, sizeof line, "  %-7s %-13s %-15s %-10s %7s %7s %8s %9s\n", "where", "suite", "op", "format",
                "passed", "failed", "skipped", "seconds");
  s << line;
  const auto all = groups();
  for (const auto& [key, g] : all) {
    const auto& [side, suite, op, format] = key;
    std::snprintf(line, sizeof line, "  %-7s %-13s %-15s %-10s %7lld %7lld %8lld %9.1f%s\n", side.c_str(),
                  suite.c_str(), op.c_str(), format.c_str(), static_cast<long long>(g.passed),
                  static_cast<long long>(g.failed), static_cast<long long>(g.skipped), g.seconds,
                  g.failed > 0 ? "  FAILED" : "");
    s << line;
  }
  // Skip reasons across groups: the same reason (an op the library does not implement) usually
  // skips checks of several suites, and is said once with where it applied.
  std::vector<std::string> reasons;
  std::map<std::string, std::pair<std::int64_t, std::string>> by_reason;  // reason -> count, where
  for (const auto& [key, g] : all) {
    const auto& [side, suite, op, format] = key;
    for (const auto& [reason, n] : g.skip_reasons) {
      auto [it, added] = by_reason.emplace(reason, std::make_pair(std::int64_t{0}, std::string()));
      if (added) reasons.push_back(reason);
      it->second.first += n;
      it->second.second += (it->second.second.empty() ? "" : ", ") + side + " " + suite + " " + op + " " + format +
                           " (" + std::to_string(n) + ")";
    }
  }
  if (!reasons.empty()) s << "skipped, with reasons:\n";
  for (const std::string& reason : reasons) {
    const auto& [n, where] = by_reason.at(reason);
    s << "  " << n << " x " << reason << "\n      in " << where << "\n";
  }
  if (!declarations.empty()) write_coverage(s, coverage());
  if (const ApproxRsqrtTally t = approx_rsqrt(); !t.empty()) s << "approximate rsqrt: " << t.line() << "\n";
  const testkit::MismatchClassification classes_all = classes();
  if (!classes_all.empty()) s << "mismatch classes over all failed checks:\n" << classes_all.report();
  if (!incidents.empty()) s << "incidents (every suite runs in a process of its own):\n";
  for (const std::string& incident : incidents) s << "  " << incident << "\n";

  const std::int64_t passed = count(Verdict::kPassed), failed = count(Verdict::kFailed),
                     skipped = count(Verdict::kSkipped);
  const RunVerdict v = verdict();
  s << "\n";
  if (!kernel_suites_ran) {
    s << "########################################################################\n"
      << "## KERNEL CONFORMANCE SKIPPED: " << kernels_skipped_reason << "\n"
      << "## Only the CPU conformance of the oracle ran"
      << (cpu_only ? " (--cpu-only)." : "; this is not a kernel conformance result.") << "\n"
      << "########################################################################\n";
  } else if (kernel_bytes_compared() == 0) {
    s << "########################################################################\n"
      << "## NOTHING CHECKED: the kernel suites ran, but no byte the library wrote was compared\n"
      << "## (every kernel check was skipped or judged a status only: see the reasons above).\n"
      << "########################################################################\n";
  }
  std::string headline;
  switch (v) {
    case RunVerdict::kPassed: headline = "PASSED"; break;
    case RunVerdict::kFailed: headline = "FAILED"; break;
    case RunVerdict::kKernelsSkipped: headline = "INCOMPLETE"; break;
    case RunVerdict::kNothingChecked: headline = "NOTHING CHECKED"; break;
    case RunVerdict::kIncomplete: {
      std::vector<std::string> ops;
      for (AbiOp op : uncovered_ops()) ops.emplace_back(abi_op_name(op));
      headline = "INCOMPLETE: op" + std::string(ops.size() > 1 ? "s " : " ") + join(ops, ", ") + " declared supported" +
                 " but no bytes compared";
      break;
    }
  }
  std::snprintf(line, sizeof line, "%lld checks, %lld passed, %lld failed, %lld skipped",
                static_cast<long long>(passed + failed + skipped), static_cast<long long>(passed),
                static_cast<long long>(failed), static_cast<long long>(skipped));
  s << headline << ": " << line;
  if (kernel_suites_ran) s << ", " << kernel_bytes_compared() << " kernel bytes compared";
  std::snprintf(line, sizeof line, ", %.1f s\n", seconds);
  s << line;
  return s.str();
}

}  // namespace kvc::runner
