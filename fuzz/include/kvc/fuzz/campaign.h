// campaign.h: running properties with seeds, coverage accounting, corpus files and replay.
//
// run_property() is one RapidCheck run of one property with one seed (shrinking included); it
// returns the outcome with the coverage the run generated and, on failure, the minimal input.
// A campaign rotates seeds and properties until its time budget is spent, writing every failure
// as a self-contained case file that `kvconform-fuzz replay FILE` runs again.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/fuzz/properties.h"
#include "kvc/oracle/options.h"

namespace kvc::fuzz {

struct RunConfig {
  std::uint64_t seed = 1;
  int cases = 100;     // successful cases needed to pass
  int max_size = 100;  // RapidCheck size; token counts grow with it
  bool shrink = true;
};

struct PropertyOutcome {
  std::string property;
  std::uint64_t seed = 0;
  bool passed = false;
  int cases = 0;  // successful cases before the verdict
  double seconds = 0.0;
  std::string message;                   // failure description
  std::optional<FailureRecord> failure;  // the shrunk counterexample
  Coverage coverage;
  std::vector<std::string> missing_classes;  // required but never generated (only when passed)
};

PropertyOutcome run_property(const PropertySpec& property, testkit::Backend& sut, const RunConfig& config);

// Case file for a failure: property, seed, mutation, contract version, aux, case, message.
nlohmann::json failure_to_json(const PropertyOutcome& outcome, oracle::OracleMutation mutation);
// Runs the property on the stored input once against `sut`. Returns the failure message, or
// nothing on pass.
std::optional<std::string> replay_case_file(const nlohmann::json& file, testkit::Backend& sut);
// The same against the oracle, with the mutation the file records (how a campaign's failure
// against a mutant replays).
std::optional<std::string> replay_case_file(const nlohmann::json& file, oracle::OracleMutation* mutation_out = nullptr);

struct CampaignConfig {
  double seconds = 60.0;
  int max_runs = 0;  // 0: no limit besides the time budget
  std::uint64_t first_seed = 1;
  int cases_per_run = 100;
  int max_size = 100;
  std::vector<std::string> properties;  // empty: all
  std::string corpus_dir = "fuzz-corpus";
  oracle::OracleMutation mutation = oracle::OracleMutation::kNone;
  bool stop_on_failure = false;
  std::string program = "kvconform-fuzz";  // for the reproduce line
};

struct CampaignSummary {
  std::int64_t cases = 0;
  double seconds = 0.0;
  int runs = 0;
  std::vector<std::string> failure_files;
  std::vector<std::string> coverage_gaps;  // "property: class" never generated
  Coverage coverage;                       // over all properties
  std::map<std::string, Coverage> coverage_by_property;
  double first_failure_seconds = -1.0;  // wall time to the first failure, shrinking included
  nlohmann::json to_json() const;
};

// `progress` receives one line per run. The backend under test is `sut` (the oracle, a device
// backend over any kernel library, a planted-defect backend); config.mutation is recorded in the
// case files and is what the oracle overload below applies.
CampaignSummary run_campaign(const CampaignConfig& config, testkit::Backend& sut,
                             const std::function<void(const std::string&)>& progress);
// The same with the oracle (carrying config.mutation) as the backend under test.
CampaignSummary run_campaign(const CampaignConfig& config, const std::function<void(const std::string&)>& progress);

}  // namespace kvc::fuzz
