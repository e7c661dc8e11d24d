// campaign.cpp: property runs, corpus files, replay and rotating campaigns (see campaign.h).
#include "testkit/backends/oracle_backend.h"
#include "kvc/fuzz/campaign.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <rapidcheck.h>

#include "testkit/io/case_file.h"

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

// The backend as a property sees it: a case the backend does not implement is discarded (never
// counted as passed). RapidCheck gives up on a run whose cases are mostly discarded. Everything
// else the backend declares (rsqrt mode, profile, the store op) passes through unchanged.
class SupportedCasesOnly final : public testkit::Backend {
 public:
  explicit SupportedCasesOnly(testkit::Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  testkit::Support supports(const InsertCase& c) const override { return inner_.supports(c); }
  RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const override { return inner_.rsqrt_mode(op, q_norm); }
  kvc::Profile declared_profile(const InsertCase& c) const override { return inner_.declared_profile(c); }
  testkit::Support supports_store(const StoreCase& c) const override { return inner_.supports_store(c); }
  Status run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) override {
    return inner_.run_store(c, backing);
  }
  kvc::Profile declared_store_profile(const StoreCase& c) const override { return inner_.declared_store_profile(c); }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    if (const testkit::Support s = inner_.supports(c); !s.supported) {
      unsupported_reason = s.reason;
      RC_DISCARD(s.reason);
    }
    return inner_.run(c, out);
  }

  std::string unsupported_reason;

 private:
  testkit::Backend& inner_;
};

// Runs one property evaluation. An exception from the backend (BufferDamageError, a CUDA error)
// becomes a recorded failure of this input, so RapidCheck shrinks it and the last failure
// recorded stays the minimal one. RapidCheck's own results (CaseResult) pass through.
void checked(const PropertySpec& property, const PropertyInput& in, PropertyContext& ctx) {
  try {
    property.check(in, ctx);
  } catch (const std::exception& e) {
    const std::string message = ctx.sut.name() + " threw on this case: " + e.what();
    *ctx.last_failure = FailureRecord{in, message, ctx.sut.declared_profile(in.c)};
    RC_FAIL(message);
  }
}

std::string shell_quote(const std::string& s) {
  if (s.find_first_of(" '\"\\$`") == std::string::npos) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// Batch size for a property in adaptive mode. `cost` is the property's measured seconds per batch
// case (negative: not measured yet; the campaign's average `global_cost` stands in, and before
// anything was measured the batch is `first_batch`, CampaignConfig::first_batch_cases). The remaining time is shared
// between the properties left in this round and, until kMinimumRounds rounds have begun, every property of the rounds
// still to come: a batch takes as many cases as its share of time pays for, at least kMinimumBatch and at most `cap`,
// and never plans past the deadline (0: this property does not fit the remaining time).
int adaptive_batch(int batch, int first_batch, int cap, double remaining, double cost, double global_cost,
                   std::size_t left_in_round, std::size_t properties, int round) {
  if (cost < 0) cost = global_cost;
  if (cost < 0) return std::min(batch, first_batch);
  cost = std::max(cost, 1e-9);
  const int future_rounds = std::max(0, kMinimumRounds - 1 - round);
  const double shares = static_cast<double>(left_in_round + static_cast<std::size_t>(future_rounds) * properties);
  const double slice = remaining / shares;
  const double floor_cases = std::min<double>(kMinimumBatch, batch);
  int n = static_cast<int>(std::clamp(std::floor(slice / cost), floor_cases, static_cast<double>(cap)));
  if (n * cost > remaining) n = static_cast<int>(std::floor(remaining / cost));
  return n;
}

}  // namespace

GenConfig generation_for(const PropertySpec& property, std::int64_t max_tokens, std::int64_t max_legacy_tokens) {
  GenConfig g = property.generation;
  if (max_tokens > 0) g.max_tokens = g.rule_breaking ? std::min(g.max_tokens, max_tokens) : max_tokens;
  if (max_legacy_tokens > 0) g.max_legacy_tokens = max_legacy_tokens;
  return g;
}

PropertyOutcome run_property(const PropertySpec& property, testkit::Backend& sut, const RunConfig& config) {
  pin_unused_global_configuration();
  PropertyOutcome outcome;
  outcome.property = property.name;
  outcome.seed = config.seed;
  // A property whose claim does not hold under the backend's profile runs no case at all.
  if (std::optional<std::string> why = not_applicable(property, sut)) {
    outcome.not_applicable = *why;
    outcome.message = *why;
    return outcome;
  }
  std::optional<FailureRecord> last_failure;
  std::string not_applicable_reason;
  SupportedCasesOnly filtered(sut);
  // After the first failure every evaluation is a shrink attempt: its classes are not cases the
  // run generated, so they go to a scratch map.
  Coverage shrink_coverage;
  const auto gen = gen_property_input(generation_for(property, config.max_tokens, config.max_legacy_tokens));
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
                                                  // A case outside the property's profiles is
                                                  // skipped before its classes count.
                                                  if (auto why = not_applicable(property, filtered, in.c)) {
                                                    ++outcome.not_applicable_cases;
                                                    not_applicable_reason = *why;
                                                    RC_DISCARD(*why);
                                                  }
                                                  Coverage& coverage =
                                                      last_failure ? shrink_coverage : outcome.coverage;
                                                  record(coverage, classify(in.c));
                                                  PropertyContext ctx{filtered, coverage, &last_failure};
                                                  try {
                                                    checked(property, in, ctx);
                                                  } catch (const rc::detail::CaseResult& r) {
                                                    if (r.type == rc::detail::CaseResult::Type::Discard)
                                                      ++outcome.discarded;
                                                    throw;
                                                  }
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
  } else if (result.template is<rc::detail::GaveUpResult>() && outcome.discarded == 0 &&
             result.template get<rc::detail::GaveUpResult>().numSuccess == 0 && outcome.not_applicable_cases > 0) {
    outcome.not_applicable = not_applicable_reason;  // every case was outside the property's profiles
    outcome.message = not_applicable_reason;
  } else if (result.template is<rc::detail::GaveUpResult>()) {
    const auto& gave_up = result.template get<rc::detail::GaveUpResult>();
    outcome.gave_up = true;
    outcome.cases = gave_up.numSuccess;
    outcome.message = "gave up after " + std::to_string(outcome.discarded) + " discarded cases" +
                      (filtered.unsupported_reason.empty()
                           ? ""
                           : " (" + sut.name() + " does not implement: " + filtered.unsupported_reason + ")") +
                      (outcome.not_applicable_cases > 0 ? " and " + std::to_string(outcome.not_applicable_cases) +
                                                              " cases not applicable: " + not_applicable_reason
                                                        : "");
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
    j["case"] = testkit::case_to_json(o.failure->input.c, o.failure->profile);
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
  if (file.contains("case")) options.profile = testkit::case_profile_from_json(file.at("case"));
  testkit::OracleBackend sut(options);
  return replay_case_file(file, sut);
}

std::optional<std::string> replay_case_file(const nlohmann::json& file, testkit::Backend& sut) {
  const std::string name = file.at("property").get<std::string>();
  const PropertySpec* property = find_property(name);
  if (!property) throw std::runtime_error("unknown property '" + name + "'");
  if (!file.contains("case")) throw std::runtime_error("the case file holds no case (the run failed without one)");
  Coverage coverage;
  std::optional<FailureRecord> failure;
  SupportedCasesOnly filtered(sut);
  PropertyContext ctx{filtered, coverage, &failure};
  const PropertyInput in{testkit::case_from_json(file.at("case")), file.at("aux").get<std::uint64_t>()};
  if (const std::optional<std::string> why = not_applicable(*property, sut, in.c))
    throw std::runtime_error(name + " on " + sut.name() + ": " + *why);
  // The property fails through RapidCheck's exception; outside a RapidCheck run it propagates.
  try {
    checked(*property, in, ctx);
  } catch (const rc::detail::CaseResult& r) {
    if (r.type == rc::detail::CaseResult::Type::Discard)
      throw std::runtime_error(sut.name() + " does not implement this case: " + filtered.unsupported_reason);
    if (r.type == rc::detail::CaseResult::Type::Failure) return failure ? failure->message : r.description;
  }
  return std::nullopt;
}

CampaignSummary run_campaign(const CampaignConfig& config, const std::function<void(const std::string&)>& progress) {
  oracle::OracleOptions options;
  options.mutation = config.mutation;
  options.profile = config.profile;
  testkit::OracleBackend sut(options);
  return run_campaign(config, sut, progress);
}

CampaignSummary run_campaign(const CampaignConfig& config, testkit::Backend& sut,
                             const std::function<void(const std::string&)>& progress) {
  if (config.batch_cases < 1) throw std::invalid_argument("cases per batch must be at least 1");
  if (config.max_size < 0) throw std::invalid_argument("max size must not be negative");
  const std::vector<PropertySpec>& table = config.property_table.empty() ? all_properties() : config.property_table;
  for (const std::string& name : config.properties)
    if (std::none_of(table.begin(), table.end(), [&](const PropertySpec& p) { return p.name == name; }))
      throw std::invalid_argument("unknown property '" + name + "' (kvconform-fuzz list names them)");
  std::vector<const PropertySpec*> properties;
  for (const PropertySpec& p : table)
    if (config.properties.empty() ||
        std::find(config.properties.begin(), config.properties.end(), p.name) != config.properties.end())
      properties.push_back(&p);
  if (properties.empty()) throw std::invalid_argument("no property matches the selection");
  const std::size_t count = properties.size();

  const auto wall_start = std::chrono::steady_clock::now();
  const std::function<double()> now = config.clock ? config.clock : [wall_start] { return since(wall_start); };
  const double start = now();
  const auto elapsed = [&] { return now() - start; };

  CampaignSummary summary;
  summary.backend = sut.name();
  summary.budget_seconds = config.seconds;
  summary.max_tokens = config.max_tokens;
  summary.max_legacy_tokens = config.max_legacy_tokens;
  summary.first_seed = config.first_seed;
  summary.last_seed = config.first_seed;
  for (const PropertySpec* p : properties) {
    PropertyStats stats;
    stats.name = p->name;
    stats.required_classes = p->required_classes;
    summary.properties.push_back(std::move(stats));
  }
  // Seconds and batch cases per property, for the adaptive batch sizes.
  std::vector<double> spent(count, 0.0), units(count, 0.0);
  double all_spent = 0.0, all_units = 0.0;

  std::string limits;
  if (config.max_tokens > 0) limits += " --max-tokens " + std::to_string(config.max_tokens);
  if (config.max_legacy_tokens > 0) limits += " --max-legacy-tokens " + std::to_string(config.max_legacy_tokens);
  if (config.max_size != 100) limits += " --max-size " + std::to_string(config.max_size);
  const std::string mutation_flag = config.mutation == oracle::OracleMutation::kNone
                                        ? ""
                                        : " --mutation " + std::string(oracle::mutation_name(config.mutation));
  const std::string backend_flags = config.backend_flags.empty() ? "" : " " + config.backend_flags;
  const std::string profile_flag =
      config.profile == kvc::vllm_profile() ? "" : " --profile " + shell_quote(kvc::profile_name(config.profile));
  // Properties not applicable under the backend's profile are found in their first batch, reported
  // apart (PropertyStats::not_applicable) and not run again; the adaptive sizing shares the time
  // among the others.
  const auto applicable_from = [&](std::size_t from) {
    std::size_t n = 0;
    for (std::size_t k = from; k < count; ++k) n += summary.properties[k].not_applicable.empty() ? 1 : 0;
    return n;
  };

  bool stop = false;
  for (int round = 0; !stop; ++round) {
    if (config.max_rounds > 0 && round >= config.max_rounds) break;
    const std::uint64_t seed = config.first_seed + static_cast<std::uint64_t>(round);
    const double round_start = elapsed();
    std::int64_t round_cases = 0;
    int round_batches = 0;
    std::string resized;  // batches the adaptive sizing made smaller or larger than config.batch_cases
    for (std::size_t i = 0; i < count; ++i) {
      const double remaining = config.seconds - elapsed();
      if (remaining <= 0 || (config.max_runs > 0 && summary.runs >= config.max_runs) ||
          (config.max_cases > 0 && summary.cases >= config.max_cases)) {
        stop = true;
        break;
      }
      const PropertySpec& p = *properties[i];
      PropertyStats& stats = summary.properties[i];
      if (!stats.not_applicable.empty()) continue;
      int n = config.batch_cases;
      if (config.adaptive) {
        // A property still missing tracked classes after its first batch may take a larger batch
        // when its share of time pays for it (cheap properties with many classes: invalid-rejected).
        const int cap = config.batch_cases * (stats.runs > 0 && !stats.missing_classes().empty() ? kCatchUpFactor : 1);
        n = adaptive_batch(config.batch_cases,
                           config.first_batch_cases > 0 ? config.first_batch_cases : config.batch_cases, cap, remaining,
                           units[i] > 0 ? spent[i] / units[i] : -1.0, all_units > 0 ? all_spent / all_units : -1.0,
                           applicable_from(i), applicable_from(0), round);
      }
      if (config.max_cases > 0) {
        const std::int64_t left = config.max_cases - summary.cases;
        n = static_cast<int>(std::min<std::int64_t>(n, (left + p.case_multiplier - 1) / p.case_multiplier));
      }
      if (n <= 0) continue;  // does not fit the remaining time; a cheaper property may
      if (n != config.batch_cases) resized += " " + p.name + " " + std::to_string(n);

      const double batch_start = elapsed();
      RunConfig run{seed, n, config.max_size, true, config.max_tokens, config.max_legacy_tokens};
      const PropertyOutcome o = run_property(p, sut, run);
      if (!o.not_applicable.empty()) {
        stats.not_applicable = o.not_applicable;
        progress("  " + p.name + ": " + o.not_applicable + "; reported apart, not run again");
        continue;
      }
      const double batch_seconds = elapsed() - batch_start;
      spent[i] += batch_seconds;
      units[i] += n;
      all_spent += batch_seconds;
      all_units += n;
      ++summary.runs;
      ++round_batches;
      summary.cases += o.cases;
      round_cases += o.cases;
      stats.cases += o.cases;
      stats.discarded += o.discarded;
      stats.not_applicable_cases += o.not_applicable_cases;
      stats.runs += 1;
      stats.seconds += batch_seconds;
      for (const auto& [cls, hits] : o.coverage) stats.class_hits[cls] += hits;
      if (o.gave_up) {
        progress("  " + p.name + " seed " + std::to_string(seed) + ": " + o.message);
        continue;
      }
      if (o.passed) continue;

      ++stats.failures;
      if (summary.first_failure_seconds < 0) summary.first_failure_seconds = elapsed();
      std::ostringstream line;
      line << "[" << static_cast<int>(elapsed()) << " s] round " << round + 1 << " " << p.name << " seed " << seed
           << ": FAILED after " << o.cases << " cases";
      if (o.failure) {
        std::filesystem::create_directories(config.corpus_dir);
        const std::string path = config.corpus_dir + "/" + p.name + "-seed" + std::to_string(seed) + ".json";
        testkit::write_json_file(path, failure_to_json(o, config.mutation));
        summary.failure_files.push_back(path);
        line << " (shrunk to: " << o.failure->input << ")\n" << o.failure->message << "\n  case file: " << path;
        line << "\n  replay on the CPU (oracle" << (mutation_flag.empty() ? "" : " mutant")
             << (profile_flag.empty() ? "" : " under the file's profile") << "): " << config.program << " replay "
             << shell_quote(path);
        if (!backend_flags.empty())
          line << "\n  replay on this backend:   " << config.program << " replay" << backend_flags << " "
               << shell_quote(path);
        else if (mutation_flag.empty() && profile_flag.empty())  // a mutant's failure is the oracle's own defect
          line << "\n  replay on the device:     " << config.program << " replay --backend device "
               << shell_quote(path);
      } else {
        line << "\n" << o.message << "\n  (no input was recorded: no case file)";
      }
      line << "\n  re-run this batch:        " << config.program << " run" << backend_flags << profile_flag
           << mutation_flag << " --property " << p.name << " --seed " << seed << " --rounds 1 --cases " << n
           << " --fixed-batch" << limits;
      progress(line.str());
      if (config.stop_on_failure) {
        stop = true;
        break;
      }
    }
    if (round_batches == 0) break;  // nothing fits the remaining budget
    summary.rounds = round + 1;
    summary.last_seed = seed;
    std::ostringstream line;
    const double round_seconds = elapsed() - round_start;
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.2f",
                  round_seconds > 0 ? static_cast<double>(round_cases) / round_seconds : 0.0);
    line << "[" << static_cast<int>(elapsed()) << " s] round " << round + 1 << " (seed " << seed
         << "): " << round_batches << "/" << applicable_from(0) << " properties, " << round_cases << " cases, " << rate
         << " cases/s; total " << summary.cases << " cases";
    if (!resized.empty()) line << "; batches resized:" << resized;
    progress(line.str());
  }
  summary.seconds = elapsed();
  return summary;
}

}  // namespace kvc::fuzz
