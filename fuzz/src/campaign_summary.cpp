// campaign_summary.cpp: campaign reports, JSON round trip and segment merging (see
// campaign_summary.h).
#include "kvc/fuzz/campaign_summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace kvc::fuzz {
namespace {

std::string format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

std::string token_limits(const CampaignSummary& s) {
  if (s.max_tokens <= 0 && s.max_legacy_tokens <= 0) return "each property's own token limit";
  std::string out = s.max_tokens > 0 ? "up to " + std::to_string(s.max_tokens) + " tokens" : "own token limits";
  if (s.max_legacy_tokens > 0) out += " (legacy problems " + std::to_string(s.max_legacy_tokens) + ")";
  return out;
}

template <typename T>
T field(const nlohmann::json& j, const char* name) {
  if (!j.contains(name)) throw std::runtime_error(std::string("campaign summary has no field '") + name + "'");
  return j.at(name).get<T>();
}

}  // namespace

std::vector<std::string> PropertyStats::missing_classes() const {
  std::vector<std::string> v;
  for (const std::string& cls : required_classes)
    if (class_hits.count(cls) == 0) v.push_back(cls);
  return v;
}

std::vector<std::string> CampaignSummary::properties_without_cases() const {
  std::vector<std::string> v;
  for (const PropertyStats& p : properties)
    if (p.cases == 0 && p.not_applicable.empty()) v.push_back(p.name);
  return v;
}

std::vector<std::string> CampaignSummary::properties_not_applicable() const {
  std::vector<std::string> v;
  for (const PropertyStats& p : properties)
    if (!p.not_applicable.empty()) v.push_back(p.name + ": " + p.not_applicable);
  return v;
}

std::vector<std::string> CampaignSummary::coverage_gaps() const {
  std::vector<std::string> v;
  for (const PropertyStats& p : properties) {
    if (!p.not_applicable.empty()) continue;  // reported apart: properties_not_applicable()
    if (p.cases == 0) {
      v.push_back(
          p.name + ": no case ran" +
          (p.discarded > 0 ? " (" + std::to_string(p.discarded) + " discarded: the backend implements none)" : ""));
      continue;
    }
    for (const std::string& cls : p.missing_classes()) v.push_back(p.name + ": class " + cls + " never generated");
  }
  return v;
}

Coverage CampaignSummary::coverage() const {
  Coverage all;
  for (const PropertyStats& p : properties)
    for (const auto& [cls, n] : p.class_hits) all[cls] += n;
  return all;
}

int CampaignSummary::exit_code() const {
  if (!failure_files.empty() ||
      std::any_of(properties.begin(), properties.end(), [](const PropertyStats& p) { return p.failures > 0; }))
    return kExitFailure;
  return coverage_gaps().empty() ? kExitPassed : kExitCoverageGap;
}

nlohmann::json CampaignSummary::to_json() const {
  nlohmann::json j;
  j["backend"] = backend;
  j["budget_seconds"] = budget_seconds;
  j["max_tokens"] = max_tokens;
  j["max_legacy_tokens"] = max_legacy_tokens;
  j["first_seed"] = first_seed;
  j["last_seed"] = last_seed;
  j["segments"] = segments;
  j["cases"] = cases;
  j["seconds"] = seconds;
  j["cases_per_second"] = cases_per_second();
  j["runs"] = runs;
  j["rounds"] = rounds;
  j["failure_files"] = failure_files;
  j["first_failure_seconds"] = first_failure_seconds;
  nlohmann::json props = nlohmann::json::array();
  for (const PropertyStats& p : properties) {
    nlohmann::json q;
    q["name"] = p.name;
    q["cases"] = p.cases;
    q["discarded"] = p.discarded;
    q["runs"] = p.runs;
    q["failures"] = p.failures;
    q["seconds"] = p.seconds;
    q["cases_per_second"] = p.cases_per_second();
    q["required_classes"] = p.required_classes;
    q["class_hits"] = p.class_hits;
    q["missing_classes"] = p.missing_classes();
    q["not_applicable"] = p.not_applicable;
    q["not_applicable_cases"] = p.not_applicable_cases;
    props.push_back(q);
  }
  j["properties"] = props;
  j["properties_without_cases"] = properties_without_cases();
  j["properties_not_applicable"] = properties_not_applicable();
  j["coverage_gaps"] = coverage_gaps();
  j["coverage"] = coverage();
  j["exit_code"] = exit_code();
  return j;
}

CampaignSummary CampaignSummary::from_json(const nlohmann::json& j) {
  CampaignSummary s;
  s.backend = field<std::string>(j, "backend");
  s.budget_seconds = field<double>(j, "budget_seconds");
  s.max_tokens = field<std::int64_t>(j, "max_tokens");
  s.max_legacy_tokens = field<std::int64_t>(j, "max_legacy_tokens");
  s.first_seed = field<std::uint64_t>(j, "first_seed");
  s.last_seed = field<std::uint64_t>(j, "last_seed");
  s.segments = field<int>(j, "segments");
  s.cases = field<std::int64_t>(j, "cases");
  s.seconds = field<double>(j, "seconds");
  s.runs = field<int>(j, "runs");
  s.rounds = field<int>(j, "rounds");
  s.failure_files = field<std::vector<std::string>>(j, "failure_files");
  s.first_failure_seconds = field<double>(j, "first_failure_seconds");
  for (const nlohmann::json& q : field<nlohmann::json>(j, "properties")) {
    PropertyStats p;
    p.name = field<std::string>(q, "name");
    p.cases = field<std::int64_t>(q, "cases");
    p.discarded = field<std::int64_t>(q, "discarded");
    p.runs = field<int>(q, "runs");
    p.failures = field<int>(q, "failures");
    p.seconds = field<double>(q, "seconds");
    p.required_classes = field<std::vector<std::string>>(q, "required_classes");
    p.class_hits = field<Coverage>(q, "class_hits");
    // Summaries written before profiles have neither field: every property applied.
    p.not_applicable = q.value("not_applicable", std::string());
    p.not_applicable_cases = q.value("not_applicable_cases", std::int64_t{0});
    s.properties.push_back(std::move(p));
  }
  return s;
}

std::string format_summary(const CampaignSummary& s) {
  std::ostringstream os;
  const std::vector<std::string> gaps = s.coverage_gaps();
  os << "campaign on " << s.backend << ", " << token_limits(s) << "\n";
  os << (s.segments > 1 ? std::to_string(s.segments) + " segments, " : "") << s.rounds << " rounds (seeds "
     << s.first_seed << ".." << s.last_seed << "), " << s.runs << " batches, " << s.cases << " cases in "
     << format("%.1f", s.seconds) << " s (" << format("%.2f", s.cases_per_second()) << " cases/s), "
     << s.failure_files.size() << " failures, " << gaps.size() << " coverage gaps"
     << (s.properties_not_applicable().empty()
             ? ""
             : ", " + std::to_string(s.properties_not_applicable().size()) + " not applicable")
     << "\n";
  os << "next segment: --seed " << s.last_seed + 1 << "\n\n";

  char line[256];
  std::snprintf(line, sizeof line, "%-24s %9s %7s %7s %5s %9s %s\n", "property", "cases", "discard", "batches", "fail",
                "cases/s", "classes hit");
  os << line;
  for (const PropertyStats& p : s.properties) {
    if (!p.not_applicable.empty()) {
      std::snprintf(line, sizeof line, "%-24s %9s %7s %7s %5s %9s %s\n", p.name.c_str(), "-", "-", "-", "-", "-",
                    "not applicable");
      os << line;
      continue;
    }
    const std::size_t hit = p.required_classes.size() - p.missing_classes().size();
    std::snprintf(line, sizeof line, "%-24s %9lld %7lld %7d %5d %9.2f %zu/%zu\n", p.name.c_str(),
                  static_cast<long long>(p.cases), static_cast<long long>(p.discarded), p.runs, p.failures,
                  p.cases_per_second(), hit, p.required_classes.size());
    os << line;
  }

  os << "\nclass hits per property (cases that contained each class the property tracks):\n";
  for (const PropertyStats& p : s.properties) {
    if (!p.not_applicable.empty()) continue;
    std::string text = "  " + p.name + ":";
    std::size_t width = text.size();
    for (std::size_t i = 0; i < p.required_classes.size(); ++i) {
      const std::string& cls = p.required_classes[i];
      const auto it = p.class_hits.find(cls);
      const std::string item = " " + cls + " " + std::to_string(it == p.class_hits.end() ? 0 : it->second) +
                               (i + 1 < p.required_classes.size() ? "," : "");
      if (width + item.size() > 110) {
        text += "\n     ";
        width = 5;
      }
      text += item;
      width += item.size();
    }
    os << text << "\n";
    if (p.not_applicable_cases > 0)
      os << "     (" << p.not_applicable_cases << " cases skipped: outside the profiles the property holds under)\n";
  }

  for (const std::string& f : s.failure_files) os << "FAILURE case file: " << f << "\n";
  for (const std::string& g : gaps) os << "COVERAGE GAP " << g << "\n";
  const std::vector<std::string> not_applicable = s.properties_not_applicable();
  for (const std::string& n : not_applicable) os << "NOT APPLICABLE " << n << "\n";
  const int rc = s.exit_code();
  std::string passed = "verdict: passed (every property ran, every tracked class hit)";
  if (!not_applicable.empty())
    passed = "verdict: passed (every applicable property ran, every tracked class hit; " +
             std::to_string(not_applicable.size()) +
             " not applicable under the backend's profile, neither passed nor checked)";
  os << (rc == kExitPassed    ? passed
         : rc == kExitFailure ? "verdict: FAILED (exit status 1)"
                              : "verdict: COVERAGE GAP (exit status 3)")
     << "\n";
  return os.str();
}

CampaignSummary merge_summaries(const std::vector<CampaignSummary>& segments) {
  if (segments.empty()) throw std::runtime_error("no campaign summary to merge");
  CampaignSummary m = segments.front();
  for (std::size_t i = 1; i < segments.size(); ++i) {
    const CampaignSummary& s = segments[i];
    if (s.backend != m.backend)
      throw std::runtime_error("segments ran on different backends: '" + m.backend + "' and '" + s.backend + "'");
    if (s.properties.size() != m.properties.size()) throw std::runtime_error("segments ran different property sets");
    if (m.first_failure_seconds < 0 && s.first_failure_seconds >= 0)
      m.first_failure_seconds = m.seconds + s.first_failure_seconds;
    m.budget_seconds += s.budget_seconds;
    m.first_seed = std::min(m.first_seed, s.first_seed);
    m.last_seed = std::max(m.last_seed, s.last_seed);
    m.segments += s.segments;
    m.cases += s.cases;
    m.seconds += s.seconds;
    m.runs += s.runs;
    m.rounds += s.rounds;
    m.failure_files.insert(m.failure_files.end(), s.failure_files.begin(), s.failure_files.end());
    for (std::size_t k = 0; k < s.properties.size(); ++k) {
      PropertyStats& to = m.properties[k];
      const PropertyStats& from = s.properties[k];
      if (to.name != from.name) throw std::runtime_error("segments ran different property sets");
      to.cases += from.cases;
      to.discarded += from.discarded;
      to.runs += from.runs;
      to.failures += from.failures;
      to.seconds += from.seconds;
      for (const auto& [cls, n] : from.class_hits) to.class_hits[cls] += n;
      if (to.not_applicable.empty()) to.not_applicable = from.not_applicable;
      to.not_applicable_cases += from.not_applicable_cases;
    }
  }
  return m;
}

}  // namespace kvc::fuzz
