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

#include "testkit/backends/forwarding_backend.h"
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
class SupportedCasesOnly final : public testkit::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  testkit::Support supports_store(const StoreCase& c) const override { return inner().supports_store(c); }
  Status run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) override {
    return inner().run_store(c, backing);
  }
  kvc::Profile declared_store_profile(const StoreCase& c) const override { return inner().declared_store_profile(c); }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    if (const testkit::Support s = inner().supports(c); !s.supported) {
      unsupported_reason = s.reason;
      RC_DISCARD(s.reason);
    }
    return inner().run(c, out);
  }

  std::string unsupported_reason;
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

namespace {

rc::detail::TestParams test_params(const PropertySpec& property, const RunConfig& config) {
  rc::detail::TestParams params;
  params.seed = config.seed;
  params.maxSuccess = config.cases * property.case_multiplier;
  params.maxSize = config.max_size;
  params.disableShrinking = !config.shrink;
  return params;
}

// RapidCheck's result, read into the outcome (which holds the counts the run kept).
void read_result(const rc::detail::TestResult& result, const PropertySpec& property, const std::string& backend,
                 const std::optional<FailureRecord>& last_failure, const std::string& unsupported_reason,
                 const std::string& not_applicable_reason, PropertyOutcome& outcome) {
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
    outcome.message =
        "gave up after " + std::to_string(outcome.discarded) + " discarded cases" +
        (unsupported_reason.empty() ? "" : " (" + backend + " does not implement: " + unsupported_reason + ")") +
        (outcome.not_applicable_cases > 0 ? " and " + std::to_string(outcome.not_applicable_cases) +
                                                " cases not applicable: " + not_applicable_reason
                                          : "");
  } else {
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    outcome.message = os.str();
  }
}

}  // namespace

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

  QuietListener listener;
  rc::detail::TestMetadata metadata;
  metadata.id = property.name;
  metadata.description = property.claim;
  const auto evaluate = [&] {
    const PropertyInput in = *gen;
    // A case outside the property's profiles is skipped before its classes count.
    if (auto why = not_applicable(property, filtered, in.c)) {
      ++outcome.not_applicable_cases;
      not_applicable_reason = *why;
      RC_DISCARD(*why);
    }
    Coverage& coverage = last_failure ? shrink_coverage : outcome.coverage;
    record(coverage, classify(in.c));
    PropertyContext ctx{filtered, coverage, &last_failure};
    try {
      checked(property, in, ctx);
    } catch (const rc::detail::CaseResult& r) {
      if (r.type == rc::detail::CaseResult::Type::Discard) ++outcome.discarded;
      throw;
    }
  };
  const auto result =
      rc::detail::checkProperty(rc::detail::toProperty(evaluate), metadata, test_params(property, config), listener);
  outcome.seconds = since(start);
  read_result(result, property, sut.name(), last_failure, filtered.unsupported_reason, not_applicable_reason, outcome);
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

namespace {

// The properties a campaign runs: those config.properties names (all when empty), in table order.
std::vector<const PropertySpec*> selected_properties(const CampaignConfig& config) {
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
  return properties;
}

// The flags a reproduce line repeats so that it selects what the campaign ran.
struct ReproduceFlags {
  std::string limits;    // " --max-tokens N ...", the non-default limits
  std::string mutation;  // " --mutation NAME", or ""
  std::string backend;   // " --backend device ...", or "" (the oracle)
  std::string profile;   // " --profile SPEC", or "" (vllm)
};

ReproduceFlags reproduce_flags(const CampaignConfig& config) {
  ReproduceFlags f;
  if (config.max_tokens > 0) f.limits += " --max-tokens " + std::to_string(config.max_tokens);
  if (config.max_legacy_tokens > 0) f.limits += " --max-legacy-tokens " + std::to_string(config.max_legacy_tokens);
  if (config.max_size != 100) f.limits += " --max-size " + std::to_string(config.max_size);
  f.mutation = config.mutation == oracle::OracleMutation::kNone
                   ? ""
                   : " --mutation " + std::string(oracle::mutation_name(config.mutation));
  f.backend = config.backend_flags.empty() ? "" : " " + config.backend_flags;
  f.profile =
      config.profile == kvc::vllm_profile() ? "" : " --profile " + shell_quote(kvc::profile_name(config.profile));
  return f;
}

// One campaign: rounds of one batch per property until a budget runs out. Holds the clock, the
// summary and the measured seconds per batch case that size the batches.
class Campaign {
 public:
  Campaign(const CampaignConfig& config, testkit::Backend& sut, const std::function<void(const std::string&)>& progress)
      : config_(config),
        sut_(sut),
        progress_(progress),
        properties_(selected_properties(config)),
        count_(properties_.size()),
        flags_(reproduce_flags(config)),
        spent_(count_, 0.0),
        units_(count_, 0.0) {
    const auto wall_start = std::chrono::steady_clock::now();
    now_ = config.clock ? config.clock : [wall_start] { return since(wall_start); };
    start_ = now_();
    summary_.backend = sut.name();
    summary_.budget_seconds = config.seconds;
    summary_.max_tokens = config.max_tokens;
    summary_.max_legacy_tokens = config.max_legacy_tokens;
    summary_.first_seed = config.first_seed;
    summary_.last_seed = config.first_seed;
    for (const PropertySpec* p : properties_) {
      PropertyStats stats;
      stats.name = p->name;
      stats.required_classes = p->required_classes;
      summary_.properties.push_back(std::move(stats));
    }
  }

  CampaignSummary run() {
    for (int round = 0; !stop_; ++round) {
      if (config_.max_rounds > 0 && round >= config_.max_rounds) break;
      if (!run_round(round)) break;  // nothing fits the remaining budget
    }
    summary_.seconds = elapsed();
    return summary_;
  }

 private:
  struct Round {
    int index = 0;
    std::uint64_t seed = 0;
    std::int64_t cases = 0;
    int batches = 0;
    std::string resized;  // batches the adaptive sizing made smaller or larger than config.batch_cases
  };

  double elapsed() const { return now_() - start_; }

  // Properties not applicable under the backend's profile are found in their first batch, reported
  // apart (PropertyStats::not_applicable) and not run again; the adaptive sizing shares the time
  // among the others.
  std::size_t applicable_from(std::size_t from) const {
    std::size_t n = 0;
    for (std::size_t k = from; k < count_; ++k) n += summary_.properties[k].not_applicable.empty() ? 1 : 0;
    return n;
  }

  // False when no batch of the round ran.
  bool run_round(int round) {
    Round r;
    r.index = round;
    r.seed = config_.first_seed + static_cast<std::uint64_t>(round);
    const double round_start = elapsed();
    for (std::size_t i = 0; i < count_ && !stop_; ++i) {
      const double remaining = config_.seconds - elapsed();
      if (remaining <= 0 || (config_.max_runs > 0 && summary_.runs >= config_.max_runs) ||
          (config_.max_cases > 0 && summary_.cases >= config_.max_cases)) {
        stop_ = true;
        break;
      }
      if (summary_.properties[i].not_applicable.empty()) run_batch(i, remaining, r);
    }
    if (r.batches == 0) return false;
    summary_.rounds = round + 1;
    summary_.last_seed = r.seed;
    report_round(r, elapsed() - round_start);
    return true;
  }

  // Cases of property i's batch this round (0: it does not fit the remaining time).
  int batch_size(std::size_t i, double remaining, int round) const {
    const PropertySpec& p = *properties_[i];
    const PropertyStats& stats = summary_.properties[i];
    int n = config_.batch_cases;
    if (config_.adaptive) {
      // A property still missing tracked classes after its first batch may take a larger batch
      // when its share of time pays for it (cheap properties with many classes: invalid-rejected).
      const int cap = config_.batch_cases * (stats.runs > 0 && !stats.missing_classes().empty() ? kCatchUpFactor : 1);
      n = adaptive_batch(
          config_.batch_cases, config_.first_batch_cases > 0 ? config_.first_batch_cases : config_.batch_cases, cap,
          remaining, units_[i] > 0 ? spent_[i] / units_[i] : -1.0, all_units_ > 0 ? all_spent_ / all_units_ : -1.0,
          applicable_from(i), applicable_from(0), round);
    }
    if (config_.max_cases > 0) {
      const std::int64_t left = config_.max_cases - summary_.cases;
      n = static_cast<int>(std::min<std::int64_t>(n, (left + p.case_multiplier - 1) / p.case_multiplier));
    }
    return n;
  }

  void run_batch(std::size_t i, double remaining, Round& r) {
    const PropertySpec& p = *properties_[i];
    PropertyStats& stats = summary_.properties[i];
    const int n = batch_size(i, remaining, r.index);
    if (n <= 0) return;  // does not fit the remaining time; a cheaper property may
    if (n != config_.batch_cases) r.resized += " " + p.name + " " + std::to_string(n);

    const double batch_start = elapsed();
    RunConfig run{r.seed, n, config_.max_size, true, config_.max_tokens, config_.max_legacy_tokens};
    const PropertyOutcome o = run_property(p, sut_, run);
    if (!o.not_applicable.empty()) {
      stats.not_applicable = o.not_applicable;
      progress_("  " + p.name + ": " + o.not_applicable + "; reported apart, not run again");
      return;
    }
    add_batch(i, o, n, elapsed() - batch_start, r);
    if (o.gave_up) {
      progress_("  " + p.name + " seed " + std::to_string(r.seed) + ": " + o.message);
      return;
    }
    if (o.passed) return;
    ++stats.failures;
    if (summary_.first_failure_seconds < 0) summary_.first_failure_seconds = elapsed();
    progress_(failure_report(p, o, n, r));
    if (config_.stop_on_failure) stop_ = true;
  }

  // A batch's time, cases and classes, into the property's stats and the campaign's totals.
  void add_batch(std::size_t i, const PropertyOutcome& o, int n, double batch_seconds, Round& r) {
    PropertyStats& stats = summary_.properties[i];
    spent_[i] += batch_seconds;
    units_[i] += n;
    all_spent_ += batch_seconds;
    all_units_ += n;
    ++summary_.runs;
    ++r.batches;
    summary_.cases += o.cases;
    r.cases += o.cases;
    stats.cases += o.cases;
    stats.discarded += o.discarded;
    stats.not_applicable_cases += o.not_applicable_cases;
    stats.runs += 1;
    stats.seconds += batch_seconds;
    for (const auto& [cls, hits] : o.coverage) stats.class_hits[cls] += hits;
  }

  // The failure, its case file (written here) and the lines that replay it and re-run the batch.
  std::string failure_report(const PropertySpec& p, const PropertyOutcome& o, int n, const Round& r) {
    std::ostringstream line;
    line << "[" << static_cast<int>(elapsed()) << " s] round " << r.index + 1 << " " << p.name << " seed " << r.seed
         << ": FAILED after " << o.cases << " cases";
    if (o.failure) {
      std::filesystem::create_directories(config_.corpus_dir);
      const std::string path = config_.corpus_dir + "/" + p.name + "-seed" + std::to_string(r.seed) + ".json";
      testkit::write_json_file(path, failure_to_json(o, config_.mutation));
      summary_.failure_files.push_back(path);
      line << " (shrunk to: " << o.failure->input << ")\n" << o.failure->message << "\n  case file: " << path;
      line << "\n  replay on the CPU (oracle" << (flags_.mutation.empty() ? "" : " mutant")
           << (flags_.profile.empty() ? "" : " under the file's profile") << "): " << config_.program << " replay "
           << shell_quote(path);
      if (!flags_.backend.empty())
        line << "\n  replay on this backend:   " << config_.program << " replay" << flags_.backend << " "
             << shell_quote(path);
      else if (flags_.mutation.empty() && flags_.profile.empty())  // a mutant's failure is the oracle's own defect
        line << "\n  replay on the device:     " << config_.program << " replay --backend device " << shell_quote(path);
    } else {
      line << "\n" << o.message << "\n  (no input was recorded: no case file)";
    }
    line << "\n  re-run this batch:        " << config_.program << " run" << flags_.backend << flags_.profile
         << flags_.mutation << " --property " << p.name << " --seed " << r.seed << " --rounds 1 --cases " << n
         << " --fixed-batch" << flags_.limits;
    return line.str();
  }

  void report_round(const Round& r, double round_seconds) {
    std::ostringstream line;
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.2f", round_seconds > 0 ? static_cast<double>(r.cases) / round_seconds : 0.0);
    line << "[" << static_cast<int>(elapsed()) << " s] round " << r.index + 1 << " (seed " << r.seed
         << "): " << r.batches << "/" << applicable_from(0) << " properties, " << r.cases << " cases, " << rate
         << " cases/s; total " << summary_.cases << " cases";
    if (!r.resized.empty()) line << "; batches resized:" << r.resized;
    progress_(line.str());
  }

  const CampaignConfig& config_;
  testkit::Backend& sut_;
  const std::function<void(const std::string&)>& progress_;
  const std::vector<const PropertySpec*> properties_;
  const std::size_t count_;
  const ReproduceFlags flags_;
  std::function<double()> now_;
  double start_ = 0.0;
  CampaignSummary summary_;
  // Seconds and batch cases per property and over all of them, for the adaptive batch sizes.
  std::vector<double> spent_, units_;
  double all_spent_ = 0.0, all_units_ = 0.0;
  bool stop_ = false;
};

}  // namespace

CampaignSummary run_campaign(const CampaignConfig& config, testkit::Backend& sut,
                             const std::function<void(const std::string&)>& progress) {
  if (config.batch_cases < 1) throw std::invalid_argument("cases per batch must be at least 1");
  if (config.max_size < 0) throw std::invalid_argument("max size must not be negative");
  return Campaign(config, sut, progress).run();
}

}  // namespace kvc::fuzz
