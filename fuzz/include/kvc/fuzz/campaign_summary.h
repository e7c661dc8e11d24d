// campaign_summary.h: what a fuzz campaign reports, as text and as JSON, and its exit status.
//
// Per property: cases, discards, batches, failures, cases/s and the hits of every class it tracks
// (its required classes). A property that got no case and a required class that was never
// generated are coverage gaps: a campaign that did not run a property claims nothing about it.
// A property whose claim does not hold under the backend's implementation profile (PropertySpec::
// profiles, docs/contract.md §6) is reported apart, with the reason: "not applicable", neither
// passed nor a coverage gap (the campaign could not have checked it).
// Campaigns longer than one sitting run as segments (consecutive seeds); merge_summaries() adds
// their JSON summaries up into the one campaign they form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/fuzz/case_recipe.h"

namespace kvc::fuzz {

// Exit status of `kvconform-fuzz run` and `summarize`: a failure outranks a coverage gap.
inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailure = 1;      // a property failed (case files written)
inline constexpr int kExitUsage = 2;        // bad arguments or files, backend unavailable
inline constexpr int kExitCoverageGap = 3;  // no failure, but a property got no case or a class no hit

struct PropertyStats {
  std::string name;
  std::int64_t cases = 0;      // successful cases (times the property's case multiplier per batch case)
  std::int64_t discarded = 0;  // cases the backend does not implement
  int runs = 0;                // batches
  int failures = 0;            // failing batches
  double seconds = 0.0;        // campaign clock, shrinking included
  std::vector<std::string> required_classes;
  Coverage class_hits;  // cases that contained each class (every class seen, required or not)
  // Why the property does not apply under the backend's profile (empty: it does), and the cases
  // skipped as outside its profiles (a backend whose declared profile varies per case).
  std::string not_applicable;
  std::int64_t not_applicable_cases = 0;

  double cases_per_second() const { return seconds > 0 ? static_cast<double>(cases) / seconds : 0.0; }
  std::vector<std::string> missing_classes() const;  // required, never hit
};

struct CampaignSummary {
  std::string backend;  // Backend::name() of the backend under test
  double budget_seconds = 0.0;
  std::int64_t max_tokens = 0;  // 0: each property's own limit
  std::int64_t max_legacy_tokens = 0;
  std::uint64_t first_seed = 0;
  std::uint64_t last_seed = 0;  // the seed of the last round that ran (a next segment starts after it)
  int segments = 1;
  std::int64_t cases = 0;
  double seconds = 0.0;
  int runs = 0;    // batches
  int rounds = 0;  // rounds begun
  std::vector<std::string> failure_files;
  std::vector<PropertyStats> properties;  // in table order
  double first_failure_seconds = -1.0;    // campaign clock to the first failure, shrinking included

  // Derived from `properties` (recomputed, never stored apart):
  std::vector<std::string> properties_without_cases() const;
  // "P: not applicable under ...": not counted as passed, nor as properties without cases.
  std::vector<std::string> properties_not_applicable() const;
  std::vector<std::string> coverage_gaps() const;  // "P: no case ran", "P: class C never generated"
  Coverage coverage() const;                       // class hits over all properties
  double cases_per_second() const { return seconds > 0 ? static_cast<double>(cases) / seconds : 0.0; }
  int exit_code() const;

  nlohmann::json to_json() const;
  // Throws std::runtime_error naming the missing field.
  static CampaignSummary from_json(const nlohmann::json& j);
};

// The report `kvconform-fuzz run` prints at the end: totals, one line per property, the class
// hits of each property's tracked classes, and one COVERAGE GAP line per gap.
std::string format_summary(const CampaignSummary& s);

// Segments of one campaign (same backend and limits, run one after another): totals and
// per-property counts added, seeds from the first segment's first to the last one's last.
// Throws std::runtime_error when the segments ran on different backends or property sets.
CampaignSummary merge_summaries(const std::vector<CampaignSummary>& segments);

}  // namespace kvc::fuzz
