// campaign.cpp: property runs, corpus files, replay and campaigns (see campaign.h).
#include "kvc/fuzz/campaign.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <rapidcheck.h>

#include "kvc/testkit/case_file.h"

namespace kvc::fuzz {
namespace {

// kvconform-fuzz reports through its own case files and reproduce lines; RapidCheck's default
// listeners would add its global configuration seed and an RC_PARAMS reproduce string at exit,
// neither of which replays a kvconform run.
class QuietListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// RapidCheck prints its global configuration (a random default seed) the first time it loads it.
// kvconform passes explicit TestParams to every run, so that seed is never used; pinning it keeps
// the misleading line out of the output. An RC_PARAMS set by the user is left alone.
void pin_unused_global_configuration() { setenv("RC_PARAMS", "seed=0", 0); }

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

PropertyOutcome run_property(const PropertySpec& property, testkit::Backend& sut, const RunConfig& config) {
  pin_unused_global_configuration();
  PropertyOutcome outcome;
  outcome.property = property.name;
  outcome.seed = config.seed;
  std::optional<FailureRecord> last_failure;
  PropertyContext ctx{sut, outcome.coverage, &last_failure};
  const auto gen = gen_property_input(property.generation);
  const auto start = std::chrono::steady_clock::now();

  rc::detail::TestParams params;
  params.seed = config.seed;
  params.maxSuccess = config.cases * property.case_multiplier;
  params.maxSize = config.max_size;
  params.disableShrinking = !config.shrink;
  QuietListener listener;
  rc::detail::TestMetadata metadata;
  metadata.id = property.name;
  metadata.description = property.claim;
  const auto result = rc::detail::checkProperty(rc::detail::toProperty([&] {
                                                  const PropertyInput in = *gen;
                                                  record(outcome.coverage, classify(in.c));
                                                  property.check(in, ctx);
                                                }),
                                                metadata, params, listener);
  outcome.seconds = since(start);

  if (result.template is<rc::detail::SuccessResult>()) {
    const auto& success = result.template get<rc::detail::SuccessResult>();
    outcome.passed = true;
    outcome.cases = success.numSuccess;
    for (const std::string& cls : property.required_classes)
      if (outcome.coverage.count(cls) == 0) outcome.missing_classes.push_back(cls);
  } else if (result.template is<rc::detail::FailureResult>()) {
    const auto& failure = result.template get<rc::detail::FailureResult>();
    outcome.cases = failure.numSuccess;
    outcome.message = failure.description;
    outcome.failure = last_failure;
  } else {
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    outcome.message = os.str();
  }
  return outcome;
}

nlohmann::json failure_to_json(const PropertyOutcome& o, oracle::OracleMutation mutation) {
  nlohmann::json j;
  j["contract_version"] = kContractVersion;
  j["property"] = o.property;
  j["seed"] = o.seed;
  j["mutation"] = std::string(oracle::mutation_name(mutation));
  j["message"] = o.failure ? o.failure->message : o.message;
  if (o.failure) {
    j["aux"] = o.failure->input.aux;
    j["case"] = testkit::case_to_json(o.failure->input.c);
    std::ostringstream summary;
    summary << o.failure->input;
    j["summary"] = summary.str();
  }
  return j;
}

std::optional<std::string> replay_case_file(const nlohmann::json& file, oracle::OracleMutation* mutation_out) {
  oracle::OracleOptions options;
  if (!oracle::mutation_from_name(file.value("mutation", std::string("none")), &options.mutation))
    throw std::runtime_error("unknown mutation in case file");
  if (mutation_out) *mutation_out = options.mutation;
  testkit::OracleBackend sut(options);
  return replay_case_file(file, sut);
}

std::optional<std::string> replay_case_file(const nlohmann::json& file, testkit::Backend& sut) {
  const std::string name = file.at("property").get<std::string>();
  const PropertySpec* property = find_property(name);
  if (!property) throw std::runtime_error("unknown property '" + name + "'");
  Coverage coverage;
  std::optional<FailureRecord> failure;
  PropertyContext ctx{sut, coverage, &failure};
  const PropertyInput in{testkit::case_from_json(file.at("case")), file.at("aux").get<std::uint64_t>()};
  // The property fails through RapidCheck's exception; outside a RapidCheck run it propagates.
  try {
    property->check(in, ctx);
  } catch (...) {
    if (failure) return failure->message;
    throw;
  }
  return std::nullopt;
}

nlohmann::json CampaignSummary::to_json() const {
  nlohmann::json j;
  j["cases"] = cases;
  j["seconds"] = seconds;
  j["cases_per_second"] = seconds > 0 ? static_cast<double>(cases) / seconds : 0.0;
  j["runs"] = runs;
  j["failure_files"] = failure_files;
  j["coverage_gaps"] = coverage_gaps;
  j["coverage"] = coverage;
  j["coverage_by_property"] = coverage_by_property;
  j["first_failure_seconds"] = first_failure_seconds;
  return j;
}

CampaignSummary run_campaign(const CampaignConfig& config, const std::function<void(const std::string&)>& progress) {
  oracle::OracleOptions options;
  options.mutation = config.mutation;
  testkit::OracleBackend sut(options);
  return run_campaign(config, sut, progress);
}

CampaignSummary run_campaign(const CampaignConfig& config, testkit::Backend& sut,
                             const std::function<void(const std::string&)>& progress) {
  std::vector<const PropertySpec*> properties;
  for (const PropertySpec& p : all_properties())
    if (config.properties.empty() ||
        std::find(config.properties.begin(), config.properties.end(), p.name) != config.properties.end())
      properties.push_back(&p);
  if (properties.empty()) throw std::runtime_error("no property matches the selection");

  CampaignSummary summary;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t seed = config.first_seed;
  std::size_t next = 0;
  while (since(start) < config.seconds) {
    const PropertySpec& p = *properties[next];
    RunConfig run{seed, config.cases_per_run, config.max_size, true};
    const PropertyOutcome o = run_property(p, sut, run);
    ++summary.runs;
    summary.cases += o.cases;
    for (const auto& [cls, n] : o.coverage) {
      summary.coverage[cls] += n;
      summary.coverage_by_property[p.name][cls] += n;
    }
    std::ostringstream line;
    line << "[" << static_cast<int>(since(start)) << "s] " << p.name << " seed " << seed << ": " << o.cases
         << " cases in " << o.seconds << " s";
    if (!o.passed) {
      if (summary.first_failure_seconds < 0) summary.first_failure_seconds = since(start);
      std::filesystem::create_directories(config.corpus_dir);
      const std::string path = config.corpus_dir + "/" + p.name + "-seed" + std::to_string(seed) + ".json";
      testkit::write_json_file(path, failure_to_json(o, config.mutation));
      summary.failure_files.push_back(path);
      line << "  FAILED";
      if (o.failure) line << " (shrunk to: " << o.failure->input << ")";
      line << "\n" << (o.failure ? o.failure->message : o.message);
      line << "\n  case file: " << path << "\n  reproduce: " << config.program << " replay " << path
           << "\n  re-run:    " << config.program << " run --property " << p.name << " --seed " << seed
           << " --runs 1 --cases " << config.cases_per_run
           << (config.mutation == oracle::OracleMutation::kNone
                   ? ""
                   : " --mutation " + std::string(oracle::mutation_name(config.mutation)));
    }
    progress(line.str());
    if (!o.passed && config.stop_on_failure) break;
    next = (next + 1) % properties.size();
    if (next == 0) ++seed;
    if (config.max_runs > 0 && summary.runs >= config.max_runs) break;
  }
  summary.seconds = since(start);
  for (const PropertySpec* p : properties) {
    if (!summary.coverage_by_property.count(p->name)) continue;
    for (const std::string& cls : p->required_classes)
      if (!summary.coverage_by_property[p->name].count(cls)) summary.coverage_gaps.push_back(p->name + ": " + cls);
  }
  return summary;
}

}  // namespace kvc::fuzz
