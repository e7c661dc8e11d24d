// run_command.cpp: `kvconform run` (see run_command.h).
#include "run_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "json_report.h"
#include "junit_xml.h"
#include "kernel_suites.h"
#include "kvc/oracle/options.h"
#include "kvc/profile.h"
#include "child_process.h"
#include "run_options.h"
#include "run_report.h"
#include "stopwatch.h"
#include "suite_child.h"
#include "suite_children.h"
#include "suite_plan.h"

namespace kvc::runner {
namespace {

// "golden, invalid, ...": every --suites value, for usage errors.
std::string suite_names() {
  std::string s;
  for (const char* suite : kAllSuites) s += (s.empty() ? "" : ", ") + std::string(suite);
  return s;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << text;
  if (!f) throw std::runtime_error("writing " + path + " failed");
}

}  // namespace

struct RunCommand::State {
  CLI::App* cmd = nullptr;
  std::string kernels;
  std::vector<std::string> ops, formats, suites;
  std::int64_t max_tokens = 0;
  std::string profile;
  std::string stacked_profile;
  std::string json_path, junit_path;
  bool cpu_only = false;
  std::string fixtures_dir = KVC_GOLDEN_FIXTURE_DIR;
  std::string oracle_mutation = "none";
  double check_timeout_seconds = kDefaultCheckTimeoutSeconds;
  // The process that runs one suite (suite_child.h): hidden options, set by the run itself.
  std::string child_suite, child_journal;
  std::size_t child_first_check = 0;

  // The options, or a usage error.
  RunOptions options() const;
  // The arguments of `run` every process of the run shares: the options without --suites (each
  // process runs one suite) and without the reports (the run writes them).
  std::vector<std::string> child_args() const;
  int execute_child(const RunOptions& options) const;
};

std::vector<std::string> RunCommand::State::child_args() const {
  const auto joined = [](const std::vector<std::string>& items) {
    std::string s;
    for (const std::string& item : items) s += (s.empty() ? "" : ",") + item;
    return s;
  };
  std::vector<std::string> a = {"run", "--fixtures", fixtures_dir, "--oracle-mutation", oracle_mutation};
  if (!kernels.empty()) a.insert(a.end(), {"--kernels", kernels});
  if (!ops.empty()) a.insert(a.end(), {"--ops", joined(ops)});
  if (!formats.empty()) a.insert(a.end(), {"--formats", joined(formats)});
  if (max_tokens > 0) a.insert(a.end(), {"--max-tokens", std::to_string(max_tokens)});
  if (!profile.empty()) a.insert(a.end(), {"--profile", profile});
  if (!stacked_profile.empty()) a.insert(a.end(), {"--stacked-profile", stacked_profile});
  if (cpu_only) a.emplace_back("--cpu-only");
  return a;
}

int RunCommand::State::execute_child(const RunOptions& options) const {
  const std::optional<SuiteRef> suite = suite_from_key(child_suite);
  if (!suite || child_journal.empty()) {
    std::fprintf(stderr,
                 "kvconform run: --child-suite '%s' with --child-journal is the run's own (see suite_child.h)\n",
                 child_suite.c_str());
    return kRunUsage;
  }
  try {
    return run_child_suite({*suite, child_journal, child_first_check}, options);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "kvconform run: %s\n", e.what());
    return kRunUsage;
  }
}

RunOptions RunCommand::State::options() const {
  RunOptions o;
  for (const std::string& name : ops) {
    const std::optional<AbiOp> op = abi_op_from_name(name);
    if (!op) throw std::invalid_argument("--ops: unknown op '" + name + "' (" + abi_op_names() + ")");
    o.ops.push_back(*op);
  }
  for (const std::string& name : formats) {
    bool found = false;
    for (const RecordLayout& l : kRecordLayouts)
      if (l.name == name) {
        o.formats.push_back(l.format);
        found = true;
      }
    if (!found)
      throw std::invalid_argument("--formats: unknown format '" + name + "' (packed584, packed528, fp8_512, bf16_512)");
  }
  for (const std::string& s : suites) {
    bool found = false;
    for (const char* known : kAllSuites) found = found || s == known;
    if (!found) throw std::invalid_argument("--suites: unknown suite '" + s + "' (" + suite_names() + ")");
    o.suites.push_back(s);
  }
  o.max_tokens = max_tokens;
  if (!profile.empty()) {
    std::string error;
    o.profile = kvc::parse_profile(profile, &error);
    if (!o.profile) throw std::invalid_argument("--profile '" + profile + "': " + error);
  }
  if (!stacked_profile.empty()) {
    std::string error;
    o.stacked_profile = kvc::parse_stacked_profile(stacked_profile, &error);
    if (!o.stacked_profile) throw std::invalid_argument("--stacked-profile '" + stacked_profile + "': " + error);
  }
  if (!oracle::mutation_from_name(oracle_mutation, &o.oracle_mutation))
    throw std::invalid_argument("--oracle-mutation: unknown mutation '" + oracle_mutation + "'");
  if (cpu_only && !kernels.empty())
    throw std::invalid_argument("--kernels names a library to check; --cpu-only checks none");
  o.kernels = kernels;
  o.cpu_only = cpu_only;
  o.fixtures_dir = fixtures_dir;
  o.check_timeout_seconds = check_timeout_seconds;
  return o;
}

RunCommand::RunCommand(CLI::App& parent) : state_(std::make_unique<State>()) {
  State& s = *state_;
  CLI::App* run = parent.add_subcommand(
      "run", "the conformance run: the oracle's CPU conformance, then the kernel library on the GPU");
  s.cmd = run;
  run->add_option("--kernels", s.kernels,
                  "kernel library (shared object implementing kvc/kernel_abi.h); default: $KVC_KERNELS, else ours");
  run->add_option("--ops", s.ops, "ABI ops to check: " + abi_op_names() + " (default all)")->delimiter(',');
  run->add_option("--formats", s.formats, "record formats: packed584, packed528, fp8_512, bf16_512 (default all)")
      ->delimiter(',');
  run->add_option("--suites", s.suites,
                  "suites: matrix, dspark, golden, invalid (kernel and oracle), kv_norm, fused_kv_norm, store, "
                  "stacked (kernel), registry, checker (oracle) (default all)")
      ->delimiter(',');
  run->add_option("--max-tokens", s.max_tokens,
                  "largest token count of a registry scenario to run (default: all on the GPU; the oracle's own "
                  "registry checks stop at 16384 unless given)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--profile", s.profile,
                  "compare the kernels under this implementation profile instead of the one the library declares "
                  "(docs/contract.md §6): vllm, sglang-store, or key=value policies");
  run->add_option("--stacked-profile", s.stacked_profile,
                  "judge the stacked context-KV op under these stacked policies instead of the ones the library "
                  "declares for each path (docs/contract.md §6.2.1): contract, sglang-dspark-stacked, "
                  "sglang-dspark-fused, or key=value policies");
  run->add_option("--json", s.json_path, "write every check and the summary as JSON");
  run->add_option("--junit", s.junit_path, "write every check as JUnit XML");
  run->add_flag("--cpu-only", s.cpu_only,
                "check the oracle only, and exit 0 when it passes although no kernel was checked");
  run->add_option("--fixtures", s.fixtures_dir, "golden fixtures folder")->capture_default_str();
  run->add_option("--check-timeout", s.check_timeout_seconds,
                  "seconds a check may run without a result before it is failed as HUNG (its process killed, the "
                  "suite resumed after it); 0: wait forever")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--oracle-mutation", s.oracle_mutation,
                  "run the CPU conformance against a deliberately broken oracle (none, scale-pad-one, "
                  "ties-away-from-zero): shows that those checks fail and how the classes name the defect")
      ->capture_default_str();
  // Hidden (no group): the run starts a process per suite with these (suite_children.h).
  run->add_option("--child-suite", s.child_suite)->group("");
  run->add_option("--child-journal", s.child_journal)->group("");
  run->add_option("--child-first-check", s.child_first_check)->group("");
}

RunCommand::~RunCommand() = default;

bool RunCommand::selected() const { return state_->cmd->parsed(); }

int RunCommand::execute() {
  RunOptions options;
  try {
    options = state_->options();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "kvconform run: %s\n", e.what());
    return kRunUsage;
  }
  if (!state_->child_suite.empty()) return state_->execute_child(options);
  const Stopwatch clock;
  RunReport report;
  report.cpu_only = options.cpu_only;
  report.profile = options.profile ? kvc::profile_name(*options.profile) : "declared by the library";
  report.stacked_profile = options.stacked_profile
                               ? kvc::stacked_profile_name(*options.stacked_profile) + " (--stacked-profile)"
                               : "declared by the library, per path taken";
  report.selected_ops.clear();
  for (AbiOp op : kAllAbiOps)
    if (options.checks_op(op)) report.selected_ops.push_back(op);
  bool run_kernels = false;
  if (options.cpu_only) {
    report.kernels_skipped_reason = "--cpu-only was given";
  } else if (const std::string no_backend = device_backend_unavailable(); !no_backend.empty()) {
    report.kernels_skipped_reason = no_backend;
  } else {
    try {
      // Loaded here for what it declares (host code); the kernel suites load it in their processes.
      const KernelSession session(options.kernels);
      report.library = session.library();
      report.declarations = session.declarations();
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "kvconform run: %s\n", e.what());
      return kRunUsage;
    }
    report.kernels_skipped_reason = cuda_device_unavailable_reason();
    run_kernels = report.kernels_skipped_reason.empty();
  }
  report.device = device_description();

  std::printf("kvconform run (contract version %d)\n", kContractVersion);
  std::printf("  kernel library: %s\n", report.library.empty() ? "(none loaded)" : report.library.c_str());
  std::printf("  device:         %s\n", report.device.c_str());
  std::printf("  profile:        %s\n", report.profile.c_str());
  std::printf("  stacked profile: %s\n", report.stacked_profile.c_str());
  if (options.oracle_mutation != oracle::OracleMutation::kNone)
    std::printf("  oracle under test: the mutant %s (its CPU conformance must fail)\n",
                std::string(oracle::mutation_name(options.oracle_mutation)).c_str());
  if (!run_kernels) std::printf("  KERNEL CONFORMANCE WILL BE SKIPPED: %s\n", report.kernels_skipped_reason.c_str());
  std::fflush(stdout);

  try {
    SuiteChildren children(this_executable(), state_->child_args(), options);
    for (const SuiteRef& suite : planned_suites(options, run_kernels)) children.run(suite, report);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "kvconform run: stopped: %s\n", e.what());
    return kRunUsage;
  }
  report.kernel_suites_ran = run_kernels;
  report.seconds = clock.seconds();
  std::printf("\n%s", report.summary().c_str());

  try {
    if (!state_->json_path.empty())
      write_text_file(state_->json_path,
                      run_to_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (!state_->junit_path.empty()) write_text_file(state_->junit_path, junit_xml(report));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvconform run: %s\n", e.what());
    return kRunUsage;
  }
  return report.exit_code();
}

}  // namespace kvc::runner
