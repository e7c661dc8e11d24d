// fuzz_cli.cpp: the campaign commands (see fuzz_cli.h).
#include "kvc/fuzz/fuzz_cli.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kvc/fuzz/backend_choice.h"
#include "kvc/fuzz/campaign.h"
#include "kvc/profile.h"
#include "testkit/io/case_file.h"

namespace kvc::fuzz {

const char* const kFuzzExitStatusText =
    "Exit status of run and summarize: 0 every property passed, ran and hit every class it tracks; 1 a property "
    "failed (case files written); 2 usage, file or backend error (e.g. --backend device without a CUDA GPU); 3 no "
    "failure but a COVERAGE GAP (a property got no case, or a tracked class no hit). replay: 0 the property holds "
    "on the stored case, 1 it fails, 2 the file cannot be replayed.\n";

struct FuzzCommands::State {
  std::string program;
  CampaignConfig config;
  std::string mutation = "none";
  std::string profile;  // "": the contract's (vllm)
  std::string json_path;
  std::string backend = "oracle";
  std::string kernels;
  bool fixed_batch = false;
  std::string replay_path;
  std::vector<std::string> segment_paths;

  CLI::App* run = nullptr;
  CLI::Option* max_tokens = nullptr;
  CLI::Option* max_legacy_tokens = nullptr;
  std::vector<CLI::App*> replays;
  CLI::App* summarize = nullptr;
  CLI::App* list = nullptr;

  int run_list() const;
  int run_summarize() const;
  int run_replay() const;
  int run_campaign_command();
};

namespace {

void add_backend_options(CLI::App* cmd, std::string* backend, std::string* kernels) {
  cmd->add_option("--backend", *backend,
                  "backend under test: oracle (CPU) or device (a kernel library on the GPU; --kernels, else "
                  "KVC_KERNELS, else our kernels)")
      ->check(CLI::IsMember({"oracle", "device"}))
      ->capture_default_str();
  cmd->add_option("--kernels", *kernels, "kernel library (shared object) for --backend device");
}

BackendChoice backend_choice(const std::string& backend, const std::string& kernels, oracle::OracleMutation mutation,
                             const kvc::Profile& profile) {
  BackendChoice choice;
  if (!backend_kind_from_name(backend, &choice.kind))
    throw std::invalid_argument("unknown backend '" + backend + "' (oracle or device)");
  choice.kernels = kernels;
  choice.mutation = mutation;
  choice.profile = profile;
  return choice;
}

}  // namespace

FuzzCommands::FuzzCommands(CLI::App& parent, std::string program) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.program = std::move(program);
  s.config.program = s.program;
  CampaignConfig& config = s.config;

  s.run = parent.add_subcommand("run", "rotate over the properties in small batches, seeds advancing per round");
  CLI::App* run = s.run;
  add_backend_options(run, &s.backend, &s.kernels);
  run->add_option("--profile", s.profile,
                  "oracle backend only: the implementation profile the oracle under test runs under "
                  "(docs/contract.md §6): vllm (default), sglang-store, or key=value policies such as "
                  "\"clamp=sglang,pad=keep\"");
  run->add_option("--seconds", config.seconds, "time budget (the batch in progress finishes)")->capture_default_str();
  run->add_option("--seed", config.first_seed, "seed of the first round; round r uses seed + r")->capture_default_str();
  run->add_option("--cases", config.batch_cases,
                  "cases per property per round (fewer when the budget would not reach every property)")
      ->capture_default_str();
  run->add_flag("--fixed-batch", s.fixed_batch, "every batch exactly --cases cases (re-running one batch)");
  run->add_option("--rounds", config.max_rounds, "stop after this many rounds (0: no limit)")->capture_default_str();
  run->add_option("--runs", config.max_runs, "stop after this many property batches (0: no limit)")
      ->capture_default_str();
  run->add_option("--max-cases", config.max_cases, "stop after this many cases (0: no limit)")->capture_default_str();
  run->add_option("--max-size", config.max_size, "RapidCheck size bound; token counts grow with it")
      ->capture_default_str();
  s.max_tokens =
      run->add_option("--max-tokens", config.max_tokens,
                      "token limit of generated problems (default: each property's own, 4096; device: 262144)");
  s.max_legacy_tokens = run->add_option("--max-legacy-tokens", config.max_legacy_tokens,
                                        "token limit of problems run through the legacy op (device: 16384)");
  run->add_option("--property", config.properties, "property to run (repeatable; default: all)");
  run->add_option("--corpus", config.corpus_dir, "folder for failure case files")->capture_default_str();
  run->add_option("--mutation", s.mutation,
                  "oracle backend only: run against a deliberately broken oracle: none, scale-pad-one, "
                  "ties-away-from-zero")
      ->capture_default_str();
  run->add_flag("--stop-on-failure", config.stop_on_failure, "stop at the first failing batch");
  run->add_option("--json", s.json_path, "also write the summary (per property: cases, cases/s, class hits) as JSON");

  add_replay(parent);

  s.summarize = parent.add_subcommand(
      "summarize", "add up the --json summaries of a campaign's segments and print the campaign's summary");
  s.summarize->add_option("files", s.segment_paths, "summaries written by run --json")->required();
  s.summarize->add_option("--json", s.json_path, "write the merged summary as JSON");

  s.list = parent.add_subcommand("list", "list the properties and the classes each must generate");
}

FuzzCommands::~FuzzCommands() = default;

void FuzzCommands::add_replay(CLI::App& parent) {
  State& s = *state_;
  CLI::App* replay = parent.add_subcommand("replay", "run the property of a case file on its stored input");
  add_backend_options(replay, &s.backend, &s.kernels);
  replay->add_option("file", s.replay_path, "case file written by a campaign")->required();
  s.replays.push_back(replay);
}

int FuzzCommands::State::run_list() const {
  for (const auto& p : all_properties()) {
    std::printf("%-24s %s\n", p.name.c_str(), p.claim.c_str());
    std::printf("%-24s requires:", "");
    for (const auto& c : p.required_classes) std::printf(" %s", c.c_str());
    std::printf("\n");
  }
  return kExitPassed;
}

int FuzzCommands::State::run_summarize() const {
  std::vector<CampaignSummary> segments;
  for (const std::string& path : segment_paths)
    segments.push_back(CampaignSummary::from_json(testkit::read_json_file(path)));
  const CampaignSummary merged = merge_summaries(segments);
  std::printf("%s", format_summary(merged).c_str());
  if (!json_path.empty()) testkit::write_json_file(json_path, merged.to_json());
  return merged.exit_code();
}

int FuzzCommands::State::run_replay() const {
  // The backend first: a device that cannot be had is reported before the file is read.
  const BackendChoice choice = backend_choice(backend, kernels, oracle::OracleMutation::kNone, kvc::vllm_profile());
  std::unique_ptr<testkit::Backend> sut;
  if (choice.kind == BackendKind::kDevice) sut = make_backend(choice);
  if (choice.kind == BackendKind::kOracle && !kernels.empty()) (void)make_backend(choice);  // refuses
  const auto file = testkit::read_json_file(replay_path);
  std::printf("replaying %s: property %s, seed %llu, mutation %s\n", replay_path.c_str(),
              file.at("property").get<std::string>().c_str(),
              static_cast<unsigned long long>(file.at("seed").get<std::uint64_t>()),
              file.value("mutation", std::string("none")).c_str());
  if (file.contains("summary")) std::printf("input: %s\n", file.at("summary").get<std::string>().c_str());
  std::optional<std::string> failure;
  if (!sut) {
    std::printf("backend: oracle (CPU)\n");
    failure = replay_case_file(file);  // with the mutation the file records
  } else {
    std::printf("backend: %s\n", sut->name().c_str());
    failure = replay_case_file(file, *sut);
  }
  if (failure) {
    std::printf("FAILED\n%s\n", failure->c_str());
    return 1;
  }
  std::printf("passed: the property holds on this input now\n");
  return 0;
}

int FuzzCommands::State::run_campaign_command() {
  if (!oracle::mutation_from_name(mutation, &config.mutation)) {
    std::fprintf(stderr, "%s: unknown mutation '%s'\n", program.c_str(), mutation.c_str());
    return kExitUsage;
  }
  if (!profile.empty()) {
    std::string error;
    const std::optional<kvc::Profile> p = kvc::parse_profile(profile, &error);
    if (!p) {
      std::fprintf(stderr, "%s: --profile '%s': %s\n", program.c_str(), profile.c_str(), error.c_str());
      return kExitUsage;
    }
    config.profile = *p;
  }
  const BackendChoice choice = backend_choice(backend, kernels, config.mutation, config.profile);
  if (choice.kind == BackendKind::kDevice) {
    if (max_tokens->count() == 0) config.max_tokens = kDeviceMaxTokens;
    if (max_legacy_tokens->count() == 0) config.max_legacy_tokens = kDeviceMaxLegacyTokens;
    config.first_batch_cases = kMinimumBatch;
  }
  config.adaptive = !fixed_batch;
  config.backend_flags = backend_flags(choice);
  const auto sut = make_backend(choice);
  std::printf("%s run: %s, budget %.0f s, seeds from %llu, batches of %d cases%s\n", program.c_str(),
              sut->name().c_str(), config.seconds, static_cast<unsigned long long>(config.first_seed),
              config.batch_cases, config.adaptive ? " (adaptive)" : "");
  if (config.profile != kvc::vllm_profile())
    std::printf("oracle under test runs under profile `%s`\n", kvc::profile_name(config.profile).c_str());
  std::fflush(stdout);
  const auto summary = run_campaign(config, *sut, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  std::printf("\n%s", format_summary(summary).c_str());
  if (!json_path.empty()) testkit::write_json_file(json_path, summary.to_json());
  return summary.exit_code();
}

std::optional<int> FuzzCommands::execute() {
  State& s = *state_;
  bool replay = false;
  for (CLI::App* r : s.replays) replay = replay || r->parsed();
  if (!s.run->parsed() && !replay && !s.summarize->parsed() && !s.list->parsed()) return std::nullopt;
  try {
    if (s.list->parsed()) return s.run_list();
    if (s.summarize->parsed()) return s.run_summarize();
    if (replay) return s.run_replay();
    return s.run_campaign_command();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", s.program.c_str(), e.what());
    return kExitUsage;
  }
}

}  // namespace kvc::fuzz
