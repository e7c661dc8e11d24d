// kvconform_fuzz_main.cpp: the campaign command.
//
//   kvconform-fuzz run [--backend oracle|device] [--kernels LIB.so] [--seconds 60] [--seed 1]
//                      [--cases 10] [--fixed-batch] [--rounds N] [--runs N] [--max-cases N]
//                      [--max-size 100] [--max-tokens N] [--max-legacy-tokens N]
//                      [--property NAME ...] [--corpus DIR] [--mutation NAME] [--stop-on-failure]
//                      [--json FILE]
//   kvconform-fuzz replay [--backend oracle|device] [--kernels LIB.so] FILE
//   kvconform-fuzz summarize SEGMENT.json ... [--json FILE]
//   kvconform-fuzz list
//
// Exit status (run, summarize): 0 passed with full coverage, 1 a property failed, 2 usage, file or
// backend errors, 3 no failure but a coverage gap. replay: 0 passes, 1 fails, 2 cannot replay.
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "kvc/fuzz/backend_choice.h"
#include "kvc/fuzz/campaign.h"
#include "kvc/testkit/case_file.h"

namespace {

constexpr const char* kExitStatusText =
    "Exit status of run and summarize: 0 every property passed, ran and hit every class it tracks; 1 a property "
    "failed (case files written); 2 usage, file or backend error (e.g. --backend device without a CUDA GPU); 3 no "
    "failure but a COVERAGE GAP (a property got no case, or a tracked class no hit). replay: 0 the property holds "
    "on the stored case, 1 it fails, 2 the file cannot be replayed.\n";

void add_backend_options(CLI::App* cmd, std::string* backend, std::string* kernels) {
  cmd->add_option("--backend", *backend,
                  "backend under test: oracle (CPU) or device (a kernel library on the GPU; --kernels, else "
                  "KVC_KERNELS, else our kernels)")
      ->check(CLI::IsMember({"oracle", "device"}))
      ->capture_default_str();
  cmd->add_option("--kernels", *kernels, "kernel library (shared object) for --backend device");
}

kvc::fuzz::BackendChoice backend_choice(const std::string& backend, const std::string& kernels,
                                        kvc::oracle::OracleMutation mutation) {
  kvc::fuzz::BackendChoice choice;
  if (!kvc::fuzz::backend_kind_from_name(backend, &choice.kind))
    throw std::invalid_argument("unknown backend '" + backend + "' (oracle or device)");
  choice.kernels = kernels;
  choice.mutation = mutation;
  return choice;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kvc;
  CLI::App app{
      "kvconform-fuzz: property campaigns against the kvconform oracle, mutants of it, or a kernel "
      "library on the GPU"};
  app.require_subcommand(1);
  app.footer(kExitStatusText);

  fuzz::CampaignConfig config;
  config.program = argv[0];
  std::string mutation = "none", json_path, backend = "oracle", kernels;
  bool fixed_batch = false;
  auto* run = app.add_subcommand("run", "rotate over the properties in small batches, seeds advancing per round");
  add_backend_options(run, &backend, &kernels);
  run->add_option("--seconds", config.seconds, "time budget (the batch in progress finishes)")->capture_default_str();
  run->add_option("--seed", config.first_seed, "seed of the first round; round r uses seed + r")->capture_default_str();
  run->add_option("--cases", config.batch_cases,
                  "cases per property per round (fewer when the budget would not reach every property)")
      ->capture_default_str();
  run->add_flag("--fixed-batch", fixed_batch, "every batch exactly --cases cases (re-running one batch)");
  run->add_option("--rounds", config.max_rounds, "stop after this many rounds (0: no limit)")->capture_default_str();
  run->add_option("--runs", config.max_runs, "stop after this many property batches (0: no limit)")
      ->capture_default_str();
  run->add_option("--max-cases", config.max_cases, "stop after this many cases (0: no limit)")->capture_default_str();
  run->add_option("--max-size", config.max_size, "RapidCheck size bound; token counts grow with it")
      ->capture_default_str();
  auto* max_tokens =
      run->add_option("--max-tokens", config.max_tokens,
                      "token limit of generated problems (default: each property's own, 4096; device: 262144)");
  auto* max_legacy_tokens = run->add_option("--max-legacy-tokens", config.max_legacy_tokens,
                                            "token limit of problems run through the legacy op (device: 16384)");
  run->add_option("--property", config.properties, "property to run (repeatable; default: all)");
  run->add_option("--corpus", config.corpus_dir, "folder for failure case files")->capture_default_str();
  run->add_option("--mutation", mutation,
                  "oracle backend only: run against a deliberately broken oracle: none, scale-pad-one, "
                  "ties-away-from-zero")
      ->capture_default_str();
  run->add_flag("--stop-on-failure", config.stop_on_failure, "stop at the first failing batch");
  run->add_option("--json", json_path, "also write the summary (per property: cases, cases/s, class hits) as JSON");

  std::string replay_path;
  auto* replay = app.add_subcommand("replay", "run the property of a case file on its stored input");
  add_backend_options(replay, &backend, &kernels);
  replay->add_option("file", replay_path, "case file written by a campaign")->required();

  std::vector<std::string> segment_paths;
  auto* summarize = app.add_subcommand(
      "summarize", "add up the --json summaries of a campaign's segments and print the campaign's summary");
  summarize->add_option("files", segment_paths, "summaries written by run --json")->required();
  summarize->add_option("--json", json_path, "write the merged summary as JSON");

  auto* list = app.add_subcommand("list", "list the properties and the classes each must generate");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? fuzz::kExitPassed : fuzz::kExitUsage;
  }

  try {
    if (*list) {
      for (const auto& p : fuzz::all_properties()) {
        std::printf("%-24s %s\n", p.name.c_str(), p.claim.c_str());
        std::printf("%-24s requires:", "");
        for (const auto& c : p.required_classes) std::printf(" %s", c.c_str());
        std::printf("\n");
      }
      return fuzz::kExitPassed;
    }
    if (*summarize) {
      std::vector<fuzz::CampaignSummary> segments;
      for (const std::string& path : segment_paths)
        segments.push_back(fuzz::CampaignSummary::from_json(testkit::read_json_file(path)));
      const fuzz::CampaignSummary merged = fuzz::merge_summaries(segments);
      std::printf("%s", fuzz::format_summary(merged).c_str());
      if (!json_path.empty()) testkit::write_json_file(json_path, merged.to_json());
      return merged.exit_code();
    }
    if (*replay) {
      // The backend first: a device that cannot be had is reported before the file is read.
      const fuzz::BackendChoice choice = backend_choice(backend, kernels, oracle::OracleMutation::kNone);
      std::unique_ptr<testkit::Backend> sut;
      if (choice.kind == fuzz::BackendKind::kDevice) sut = fuzz::make_backend(choice);
      if (choice.kind == fuzz::BackendKind::kOracle && !kernels.empty()) (void)fuzz::make_backend(choice);  // refuses
      const auto file = testkit::read_json_file(replay_path);
      std::printf("replaying %s: property %s, seed %llu, mutation %s\n", replay_path.c_str(),
                  file.at("property").get<std::string>().c_str(),
                  static_cast<unsigned long long>(file.at("seed").get<std::uint64_t>()),
                  file.value("mutation", std::string("none")).c_str());
      if (file.contains("summary")) std::printf("input: %s\n", file.at("summary").get<std::string>().c_str());
      std::optional<std::string> failure;
      if (!sut) {
        std::printf("backend: oracle (CPU)\n");
        failure = fuzz::replay_case_file(file);  // with the mutation the file records
      } else {
        std::printf("backend: %s\n", sut->name().c_str());
        failure = fuzz::replay_case_file(file, *sut);
      }
      if (failure) {
        std::printf("FAILED\n%s\n", failure->c_str());
        return 1;
      }
      std::printf("passed: the property holds on this input now\n");
      return 0;
    }

    if (!oracle::mutation_from_name(mutation, &config.mutation)) {
      std::fprintf(stderr, "kvconform-fuzz: unknown mutation '%s'\n", mutation.c_str());
      return fuzz::kExitUsage;
    }
    const fuzz::BackendChoice choice = backend_choice(backend, kernels, config.mutation);
    if (choice.kind == fuzz::BackendKind::kDevice) {
      if (max_tokens->count() == 0) config.max_tokens = fuzz::kDeviceMaxTokens;
      if (max_legacy_tokens->count() == 0) config.max_legacy_tokens = fuzz::kDeviceMaxLegacyTokens;
    }
    config.adaptive = !fixed_batch;
    config.backend_flags = fuzz::backend_flags(choice);
    const auto sut = fuzz::make_backend(choice);
    std::printf("kvconform-fuzz run: %s, budget %.0f s, seeds from %llu, batches of %d cases%s\n", sut->name().c_str(),
                config.seconds, static_cast<unsigned long long>(config.first_seed), config.batch_cases,
                config.adaptive ? " (adaptive)" : "");
    std::fflush(stdout);
    const auto summary = fuzz::run_campaign(config, *sut, [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    });
    std::printf("\n%s", fuzz::format_summary(summary).c_str());
    if (!json_path.empty()) testkit::write_json_file(json_path, summary.to_json());
    return summary.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvconform-fuzz: %s\n", e.what());
    return fuzz::kExitUsage;
  }
}
