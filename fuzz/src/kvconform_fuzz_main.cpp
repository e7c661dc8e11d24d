// kvconform_fuzz_main.cpp: the campaign command.
//
//   kvconform-fuzz run [--seconds 60] [--seed 1] [--property NAME ...] [--mutation NAME] [--json FILE]
//   kvconform-fuzz replay FILE
//   kvconform-fuzz list
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "kvc/fuzz/campaign.h"
#include "kvc/testkit/case_file.h"

int main(int argc, char** argv) {
  using namespace kvc;
  CLI::App app{"kvconform-fuzz: property campaigns against the kvconform oracle (and mutants of it)"};
  app.require_subcommand(1);

  fuzz::CampaignConfig config;
  config.program = argv[0];
  std::string mutation = "none", json_path;
  auto* run = app.add_subcommand("run", "run properties with rotating seeds for a time budget");
  run->add_option("--seconds", config.seconds, "time budget (a run in progress finishes)")->capture_default_str();
  run->add_option("--runs", config.max_runs, "stop after this many property runs (0: no limit)")->capture_default_str();
  run->add_option("--seed", config.first_seed, "first seed; each round of properties takes the next")
      ->capture_default_str();
  run->add_option("--cases", config.cases_per_run, "successful cases per property run")->capture_default_str();
  run->add_option("--max-size", config.max_size, "RapidCheck size bound; token counts grow with it")
      ->capture_default_str();
  run->add_option("--property", config.properties, "property to run (repeatable; default: all)");
  run->add_option("--corpus", config.corpus_dir, "folder for failure case files")->capture_default_str();
  run->add_option("--mutation", mutation,
                  "run against a deliberately broken oracle: none, scale-pad-one, ties-away-from-zero")
      ->capture_default_str();
  run->add_flag("--stop-on-failure", config.stop_on_failure, "stop at the first failing run");
  run->add_option("--json", json_path, "write the campaign summary (cases/s, coverage, failures) as JSON");

  std::string replay_path;
  auto* replay = app.add_subcommand("replay", "run the property of a case file on its stored input");
  replay->add_option("file", replay_path, "case file written by a campaign")->required();

  auto* list = app.add_subcommand("list", "list the properties and the classes each must generate");
  CLI11_PARSE(app, argc, argv);

  try {
    if (*list) {
      for (const auto& p : fuzz::all_properties()) {
        std::printf("%-24s %s\n", p.name.c_str(), p.claim.c_str());
        std::printf("%-24s requires:", "");
        for (const auto& c : p.required_classes) std::printf(" %s", c.c_str());
        std::printf("\n");
      }
      return 0;
    }
    if (*replay) {
      const auto file = testkit::read_json_file(replay_path);
      std::printf("replaying %s: property %s, seed %llu, mutation %s\n", replay_path.c_str(),
                  file.at("property").get<std::string>().c_str(),
                  static_cast<unsigned long long>(file.at("seed").get<std::uint64_t>()),
                  file.value("mutation", std::string("none")).c_str());
      if (file.contains("summary")) std::printf("input: %s\n", file.at("summary").get<std::string>().c_str());
      const auto failure = fuzz::replay_case_file(file);
      if (failure) {
        std::printf("FAILED\n%s\n", failure->c_str());
        return 1;
      }
      std::printf("passed: the property holds on this input now\n");
      return 0;
    }
    if (!oracle::mutation_from_name(mutation, &config.mutation)) {
      std::fprintf(stderr, "unknown mutation '%s'\n", mutation.c_str());
      return 2;
    }
    const auto summary = fuzz::run_campaign(config, [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    });
    std::printf("\ncampaign: %d runs, %lld cases in %.1f s (%.1f cases/s), %zu failures\n", summary.runs,
                static_cast<long long>(summary.cases), summary.seconds,
                summary.seconds > 0 ? static_cast<double>(summary.cases) / summary.seconds : 0.0,
                summary.failure_files.size());
    std::printf("coverage (cases that contained each class):\n");
    for (const auto& [cls, n] : summary.coverage) std::printf("  %-28s %lld\n", cls.c_str(), static_cast<long long>(n));
    for (const auto& gap : summary.coverage_gaps) std::printf("COVERAGE GAP %s\n", gap.c_str());
    if (!json_path.empty()) testkit::write_json_file(json_path, summary.to_json());
    return summary.failure_files.empty() && summary.coverage_gaps.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvconform-fuzz: %s\n", e.what());
    return 2;
  }
}
