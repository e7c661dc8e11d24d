// campaign.h: running properties with seeds, coverage accounting, corpus files and replay.
//
// run_property() is one RapidCheck run of one property with one seed (shrinking included); it
// returns the outcome with the coverage the run generated and, on failure, the minimal input.
// A campaign rotates over every selected property in rounds: each round gives each property one
// small batch of cases (one RapidCheck run, the round's seed), so a time budget is spread over all
// of them; batch sizes adapt to the budget (see CampaignConfig). Every failure is shrunk and
// written as a self-contained case file that `kvconform-fuzz replay FILE` runs again, on the CPU
// against the oracle or on the device against a kernel library. The summary (campaign_summary.h)
// lists per property its cases, failures, cases/s and class hits, and every coverage gap.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/fuzz/campaign_summary.h"
#include "kvc/fuzz/properties.h"
#include "kvc/profile.h"
#include "kvc/oracle/options.h"

namespace kvc::fuzz {

struct RunConfig {
  std::uint64_t seed = 1;
  int cases = 100;     // successful cases needed to pass (times the property's case multiplier)
  int max_size = 100;  // RapidCheck size; token counts grow with it
  bool shrink = true;
  // Token limits of the generated problems (generation_for()); 0 keeps the property's own.
  std::int64_t max_tokens = 0;
  std::int64_t max_legacy_tokens = 0;
};

// The generation a property runs with under a campaign's token limits: max_tokens > 0 replaces
// the property's own limit, except that a rule-breaking property keeps a smaller one (validation
// does not depend on size); max_legacy_tokens > 0 caps problems that run through the legacy op.
GenConfig generation_for(const PropertySpec& property, std::int64_t max_tokens, std::int64_t max_legacy_tokens);

struct PropertyOutcome {
  std::string property;
  std::uint64_t seed = 0;
  bool passed = false;
  // RapidCheck gave up: too many discarded cases (the backend implements too few of the cases
  // the property generates). Not a failure, but passed stays false and cases may be 0.
  bool gave_up = false;
  int cases = 0;      // successful cases before the verdict
  int discarded = 0;  // cases the backend does not implement (Backend::supports), or the property discarded
  // The property's claim does not hold under the profile the backend declares (PropertySpec::
  // profiles, docs/contract.md §6): why, when no case applied ("not applicable under sglang-store
  // (negation-flips-sign holds under Inf block `vllm` ...)"). Then passed is false, nothing failed,
  // and no case ran. A backend whose declared profile varies per case may have only some cases
  // excluded: those are counted apart from `discarded`.
  std::string not_applicable;
  int not_applicable_cases = 0;
  double seconds = 0.0;
  std::string message;                   // failure description
  std::optional<FailureRecord> failure;  // the shrunk counterexample
  Coverage coverage;
  std::vector<std::string> missing_classes;  // required but never generated (only when passed)
};

// Cases the backend does not implement (Backend::supports) are discarded, never passed; an
// exception thrown by the backend (device memory damaged, a CUDA error) fails the case like a
// wrong byte, so it is shrunk and recorded like one.
PropertyOutcome run_property(const PropertySpec& property, testkit::Backend& sut, const RunConfig& config);

// Case file for a failure: property, seed, mutation, contract version, aux, case (with the profile
// the backend declared for it, docs/contract.md §6.5), message.
nlohmann::json failure_to_json(const PropertyOutcome& outcome, oracle::OracleMutation mutation);
// Runs the property on the stored input once against `sut` (under the profile `sut` declares).
// Returns the failure message, or nothing on pass. Throws std::runtime_error when the file cannot
// be replayed (unknown property, a case of another contract version that means something else, a
// profile this build cannot read), the backend does not implement the case, or the property is
// not applicable under the backend's profile.
std::optional<std::string> replay_case_file(const nlohmann::json& file, testkit::Backend& sut);
// The same against the oracle, with the mutation and the profile the file records (how a
// campaign's failure against a mutant, or an oracle under a profile, replays).
std::optional<std::string> replay_case_file(const nlohmann::json& file, oracle::OracleMutation* mutation_out = nullptr);

struct CampaignConfig {
  double seconds = 60.0;         // time budget; the batch in progress finishes
  int max_runs = 0;              // stop after this many property batches (0: no limit)
  int max_rounds = 0;            // stop after this many rounds (0: no limit)
  std::int64_t max_cases = 0;    // case budget: stop once this many cases ran (0: no limit)
  std::uint64_t first_seed = 1;  // round r runs every property with seed first_seed + r
  // Cases per property per round. With `adaptive`, a batch takes fewer when the budget would
  // otherwise not reach every property: from the seconds per case measured so far (the
  // property's own, else the campaign's average), batches are sized so that the remaining time is
  // spread over at least kMinimumRounds rounds of every property, and none plans past the
  // deadline; a property still missing tracked classes may take up to kCatchUpFactor times more
  // when its share of the time pays for it. Without it every batch is exactly this size (what a
  // re-run line uses to reproduce one batch).
  int batch_cases = 10;
  // The batch before anything was measured (0: batch_cases). Device campaigns take kMinimumBatch:
  // one of their cases can take seconds (262144-token problems against the CPU oracle), and ten
  // of them before the first measurement ate half of a one-minute budget on the H200.
  int first_batch_cases = 0;
  bool adaptive = true;
  int max_size = 100;
  // Token limits (generation_for()); 0 keeps each property's own (4096 tokens; 256 for invalid
  // problems). A device campaign raises them (kvconform-fuzz: 262144, legacy problems 16384).
  std::int64_t max_tokens = 0;
  std::int64_t max_legacy_tokens = 0;
  std::vector<std::string> properties;  // empty: all
  // The property table to select from; empty: all_properties(). Tests plant properties here.
  std::vector<PropertySpec> property_table;
  std::string corpus_dir = "fuzz-corpus";
  oracle::OracleMutation mutation = oracle::OracleMutation::kNone;
  // The implementation profile (docs/contract.md §6) of the oracle under test when the backend is
  // the oracle; a device backend's profile is the one its library declares.
  kvc::Profile profile = kvc::vllm_profile();
  bool stop_on_failure = false;
  std::string program = "kvconform-fuzz";  // for the reproduce lines
  // How the reproduce lines select the backend under test ("--backend device --kernels x.so");
  // empty: the oracle.
  std::string backend_flags;
  // Seconds on a monotonic clock; every scheduling decision and the summary's seconds use it.
  // Null: std::chrono::steady_clock. Tests inject a deterministic one.
  std::function<double()> clock;
};

// Rounds the adaptive sizing spreads the remaining budget over (see CampaignConfig::adaptive).
inline constexpr int kMinimumRounds = 3;
// The smallest batch the adaptive sizing plans while the deadline allows it: RapidCheck spreads a
// batch's sizes from 0 to max_size, so a batch of one runs size 0 only (mostly empty problems);
// two run sizes 0 and max_size.
inline constexpr int kMinimumBatch = 2;
// A property that still misses a tracked class after its first batch may take up to this many
// times the configured batch, when its share of the time pays for it.
inline constexpr int kCatchUpFactor = 4;

// `progress` receives one line per round and the full report of every failure. The backend under
// test is `sut` (the oracle, a device backend over any kernel library, a planted-defect backend);
// config.mutation is recorded in the case files and is what the oracle overload below applies.
CampaignSummary run_campaign(const CampaignConfig& config, testkit::Backend& sut,
                             const std::function<void(const std::string&)>& progress);
// The same with the oracle (carrying config.mutation and config.profile) as the backend under test.
CampaignSummary run_campaign(const CampaignConfig& config, const std::function<void(const std::string&)>& progress);

}  // namespace kvc::fuzz
