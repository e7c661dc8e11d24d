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
#include "oracle_suites.h"
#include "run_options.h"
#include "run_report.h"
#include "stopwatch.h"

namespace kvc::runner {
namespace {

// A progress line at least this often on long runs, whatever finishes.
constexpr double kProgressIntervalSeconds = 5.0;
// Checks at least this long get a line of their own.
constexpr double kSlowCheckSeconds = 1.0;

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

// Prints suites and checks as they finish and keeps every result.
class Progress {
 public:
  explicit Progress(RunReport& report) : report_(report) {}

  RunSink sink() {
    return {[this](const std::string& title, std::size_t checks) { begin(title, checks); },
            [this](CheckResult r) { record(std::move(r)); }};
  }
  void end_suite() {
    if (suite_total_ == 0 && title_.empty()) return;
    std::printf("  %zu passed, %zu failed, %zu skipped (%.1f s)\n", passed_, failed_, skipped_, suite_clock_.seconds());
    std::fflush(stdout);
    title_.clear();
  }

 private:
  void begin(const std::string& title, std::size_t checks) {
    end_suite();
    title_ = title;
    suite_total_ = checks;
    done_ = passed_ = failed_ = skipped_ = 0;
    suite_clock_ = Stopwatch();
    std::printf("\n== %s (%zu checks)\n", title.c_str(), checks);
    std::fflush(stdout);
  }

  void record(CheckResult r) {
    ++done_;
    if (r.verdict == Verdict::kPassed) ++passed_;
    if (r.verdict == Verdict::kFailed) ++failed_;
    if (r.verdict == Verdict::kSkipped) ++skipped_;
    const bool print = r.verdict == Verdict::kFailed || r.seconds >= kSlowCheckSeconds ||
                       since_print_.seconds() >= kProgressIntervalSeconds || done_ == suite_total_;
    if (print) {
      std::printf("  [%4zu/%4zu] %s %s %s %s: %s (%.2f s)\n", done_, suite_total_, r.side.c_str(), r.suite.c_str(),
                  r.format.c_str(), r.name.c_str(), std::string(verdict_name(r.verdict)).c_str(), r.seconds);
      if (r.verdict == Verdict::kFailed) {
        std::printf("%s", indent(r.message).c_str());
        if (!r.classes.empty()) std::printf("%s", r.classes.report().c_str());
      }
      std::fflush(stdout);
      since_print_ = Stopwatch();
    }
    report_.checks.push_back(std::move(r));
  }

  static std::string indent(const std::string& text) {
    std::string out = "      ";
    for (char c : text) {
      out += c;
      if (c == '\n') out += "      ";
    }
    while (!out.empty() && (out.back() == ' ')) out.pop_back();
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
  }

  RunReport& report_;
  std::string title_;
  std::size_t suite_total_ = 0, done_ = 0, passed_ = 0, failed_ = 0, skipped_ = 0;
  Stopwatch suite_clock_, since_print_;
};

}  // namespace

struct RunCommand::State {
  CLI::App* cmd = nullptr;
  std::string kernels;
  std::vector<std::string> ops, formats, suites;
  std::int64_t max_tokens = 0;
  std::string profile;
  std::string json_path, junit_path;
  bool cpu_only = false;
  std::string fixtures_dir = KVC_GOLDEN_FIXTURE_DIR;
  std::string oracle_mutation = "none";

  // The options, or a usage error.
  RunOptions options() const;
};

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
  if (!oracle::mutation_from_name(oracle_mutation, &o.oracle_mutation))
    throw std::invalid_argument("--oracle-mutation: unknown mutation '" + oracle_mutation + "'");
  if (cpu_only && !kernels.empty())
    throw std::invalid_argument("--kernels names a library to check; --cpu-only checks none");
  o.kernels = kernels;
  o.cpu_only = cpu_only;
  o.fixtures_dir = fixtures_dir;
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
  run->add_option("--json", s.json_path, "write every check and the summary as JSON");
  run->add_option("--junit", s.junit_path, "write every check as JUnit XML");
  run->add_flag("--cpu-only", s.cpu_only,
                "check the oracle only, and exit 0 when it passes although no kernel was checked");
  run->add_option("--fixtures", s.fixtures_dir, "golden fixtures folder")->capture_default_str();
  run->add_option("--oracle-mutation", s.oracle_mutation,
                  "run the CPU conformance against a deliberately broken oracle (none, scale-pad-one, "
                  "ties-away-from-zero): shows that those checks fail and how the classes name the defect")
      ->capture_default_str();
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
  const Stopwatch clock;
  RunReport report;
  report.cpu_only = options.cpu_only;
  report.profile = options.profile ? kvc::profile_name(*options.profile) : "declared by the library";
  report.selected_ops.clear();
  for (AbiOp op : kAllAbiOps)
    if (options.checks_op(op)) report.selected_ops.push_back(op);
  std::unique_ptr<KernelSession> session;
  if (options.cpu_only) {
    report.kernels_skipped_reason = "--cpu-only was given";
  } else if (const std::string no_backend = device_backend_unavailable(); !no_backend.empty()) {
    report.kernels_skipped_reason = no_backend;
  } else {
    try {
      session = std::make_unique<KernelSession>(options.kernels);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "kvconform run: %s\n", e.what());
      return kRunUsage;
    }
    report.library = session->library();
    report.declarations = session->declarations();
    if (const std::string no_device = cuda_device_unavailable_reason(); !no_device.empty()) {
      report.kernels_skipped_reason = no_device;
      session.reset();
    }
  }
  report.device = device_description();

  std::printf("kvconform run (contract version %d)\n", kContractVersion);
  std::printf("  kernel library: %s\n", report.library.empty() ? "(none loaded)" : report.library.c_str());
  std::printf("  device:         %s\n", report.device.c_str());
  std::printf("  profile:        %s\n", report.profile.c_str());
  if (options.oracle_mutation != oracle::OracleMutation::kNone)
    std::printf("  oracle under test: the mutant %s (its CPU conformance must fail)\n",
                std::string(oracle::mutation_name(options.oracle_mutation)).c_str());
  if (!session) std::printf("  KERNEL CONFORMANCE WILL BE SKIPPED: %s\n", report.kernels_skipped_reason.c_str());
  std::fflush(stdout);

  Progress progress(report);
  try {
    run_oracle_conformance(options, progress.sink());
    if (session) {
      session->run(options, progress.sink());
      report.kernel_suites_ran = true;
    }
  } catch (const std::exception& e) {
    progress.end_suite();
    std::fprintf(stderr, "kvconform run: stopped: %s\n", e.what());
    return kRunUsage;
  }
  progress.end_suite();
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
