// probe_command.cpp: `kvconform probe` and its child `probe-one` (see probe_command.h).
#include "probe_command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "kernel_suites.h"
#include "kvc/contract.h"
#include "kvc/kernel_abi.h"
#include "probe_cells.h"
#include "probe_library.h"
#include "probe_process.h"
#include "probe_report.h"
#include "stopwatch.h"

namespace kvc::runner {
namespace {

// A call that takes longer than this is a hang: the small cases run in milliseconds and a CUDA
// context starts in about a second.
constexpr double kDefaultTimeoutSeconds = 60;
// Calls in flight at once: each child spends most of its time starting CUDA, and a GPU holds the
// few contexts with room to spare.
constexpr int kDefaultJobs = 4;

std::string_view entry_point_of(ProbeFamily f) {
  switch (f) {
    case ProbeFamily::kInsert: return "kvc_kv_only_insert";
    case ProbeFamily::kStore: return "kvc_store_rotated";
    case ProbeFamily::kStacked: return "kvc_stacked_ctx_kv";
  }
  return "?";
}

}  // namespace

struct ProbeCommand::State {
  CLI::App* probe = nullptr;
  CLI::App* one = nullptr;
  std::string kernels;
  std::vector<std::string> ops, rules;
  std::string json_path;
  std::uint64_t seed = 1;
  double timeout = kDefaultTimeoutSeconds;
  int jobs = kDefaultJobs;
  std::string cell_name;  // probe-one

  int probe_all();
  int probe_one();
  // The cells the options select, or a usage error (std::invalid_argument).
  std::vector<ProbeCell> selected_cells() const;
};

ProbeCommand::ProbeCommand(CLI::App& parent) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.probe = parent.add_subcommand(
      "probe", "what a kernel library does with bad input: every rule breaker sent to the library itself, classified");
  s.probe->add_option("--kernels", s.kernels,
                      "kernel library (shared object implementing kvc/kernel_abi.h); default: $KVC_KERNELS, else ours");
  s.probe->add_option("--ops", s.ops, "ABI ops whose calls are sent: " + abi_op_names() + " (default all)")
      ->delimiter(',');
  s.probe
      ->add_option("--rules", s.rules,
                   "rule breakers (\"SlotBeyondTheCache\") or cells (\"SlotBeyondTheCache_KvOnly_Packed584\") to send "
                   "(default all)")
      ->delimiter(',');
  s.probe->add_option("--json", s.json_path, "write every call, its class and where, and the count per class as JSON");
  s.probe->add_option("--seed", s.seed, "seed of the small cases the rules are broken in")->capture_default_str();
  s.probe->add_option("--timeout", s.timeout, "seconds a call may take before it is classified as hung")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s.probe->add_option("--jobs", s.jobs, "calls in flight at once, each in its own process")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s.probe->footer(
      "exit status: 0 every selected call was classified (the probe reports, it does not judge); 2 usage; 3 the "
      "kernel library cannot be loaded; 4 NOTHING PROBED: no usable CUDA device (or no device backend in this build)");

  s.one = parent.add_subcommand("probe-one", "one call of kvconform probe, in a process of its own");
  s.one->group("");  // hidden: the probe's child
  s.one->add_option("--kernels", s.kernels);
  s.one->add_option("--cell", s.cell_name)->required();
  s.one->add_option("--seed", s.seed);
}

ProbeCommand::~ProbeCommand() = default;

bool ProbeCommand::selected() const { return state_->probe->parsed() || state_->one->parsed(); }

int ProbeCommand::execute() { return state_->one->parsed() ? state_->probe_one() : state_->probe_all(); }

std::vector<ProbeCell> ProbeCommand::State::selected_cells() const {
  std::set<AbiOp> op_filter;
  for (const std::string& name : ops) {
    const std::optional<AbiOp> op = abi_op_from_name(name);
    if (!op) throw std::invalid_argument("--ops: unknown op '" + name + "' (" + abi_op_names() + ")");
    op_filter.insert(*op);
  }
  std::vector<ProbeCell> all = probe_cells(seed);
  std::set<std::string> known;
  for (const ProbeCell& c : all) {
    known.insert(c.rule);
    known.insert(c.name);
  }
  for (const std::string& r : rules)
    if (!known.count(r)) throw std::invalid_argument("--rules: no rule breaker or cell named '" + r + "'");
  const std::set<std::string> rule_filter(rules.begin(), rules.end());
  std::vector<ProbeCell> cells;
  for (ProbeCell& c : all)
    if ((op_filter.empty() || op_filter.count(c.op)) &&
        (rule_filter.empty() || rule_filter.count(c.rule) || rule_filter.count(c.name)))
      cells.push_back(std::move(c));
  return cells;
}

int ProbeCommand::State::probe_all() {
  std::vector<ProbeCell> cells;
  try {
    cells = selected_cells();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "kvconform probe: %s\n", e.what());
    return kProbeUsage;
  }
  if (const std::string why = device_backend_unavailable(); !why.empty()) {
    std::printf("kvconform probe: NOTHING PROBED: %s\n", why.c_str());
    return kProbeNoDevice;
  }
  std::unique_ptr<ProbeLibrary> library;
  try {
    library = std::make_unique<ProbeLibrary>(kernels);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "kvconform probe: cannot load the kernel library: %s\n", e.what());
    return kProbeLibraryNotLoaded;
  }
  if (const std::string why = cuda_device_unavailable_reason(); !why.empty()) {
    std::printf("kvconform probe: %s\nNOTHING PROBED: the GPU is absent (%s); no call was sent\n",
                library->describe().c_str(), why.c_str());
    return kProbeNoDevice;
  }

  ProbeReport report;
  report.library = library->describe();
  report.device = device_description();
  report.seed = seed;
  std::map<ProbeFamily, int> left_out;
  std::vector<ProbeCell> sent;
  for (ProbeCell& c : cells) {
    if (library->exports(c.family))
      sent.push_back(std::move(c));
    else
      ++left_out[c.family];
  }
  for (const auto& [family, n] : left_out)
    report.not_probed.push_back(std::string(entry_point_of(family)) + " is not exported: " + std::to_string(n) + " " +
                                std::string(probe_family_name(family)) + " calls not sent");
  if (sent.empty()) {
    std::fprintf(stderr, "kvconform probe: nothing to send: the selection holds no call of an entry point %s exports\n",
                 report.library.c_str());
    return kProbeUsage;
  }

  std::printf("kvconform probe (contract version %d)\n", kContractVersion);
  std::printf("  kernel library: %s\n", report.library.c_str());
  std::printf("  device:         %s\n", report.device.c_str());
  std::printf("  calls:          %zu, each in a process of its own (%d at a time, time limit %.0f s), seed %llu\n",
              sent.size(), jobs, timeout, static_cast<unsigned long long>(seed));
  for (const std::string& why : report.not_probed) std::printf("  not probed:     %s\n", why.c_str());
  std::printf("\n%s", probe_table_header().c_str());
  std::fflush(stdout);

  // Every row prepared first; the calls then run up to `jobs` at a time, each in its own process
  // (their CUDA contexts are apart: one call's fault cannot reach another), and the rows are
  // classified and printed in order as they end.
  std::vector<testkit::ProbeInput> inputs(sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const ProbeCell& c = sent[i];
    ProbeRow row;
    row.cell = c.name;
    row.family = std::string(probe_family_name(c.family));
    row.rule = c.rule;
    row.op = std::string(abi_op_name(c.op));
    row.format = c.format;
    row.code = static_cast<int>(c.code);
    row.right_codes = c.right_codes;
    const CellDeclaration declared = library->declaration(c);
    row.declared_enforced = declared.declared_enforced;
    if (declared.outside_support) row.right_codes.push_back(KVC_STATUS_UNSUPPORTED);
    inputs[i].not_sent = c.not_sent;
    inputs[i].expected.right_codes = row.right_codes;
    report.rows.push_back(std::move(row));
  }
  const std::string program = own_executable();
  std::vector<std::vector<std::string>> commands(sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    if (!sent[i].not_sent.empty()) continue;
    commands[i] = {program, "probe-one", "--cell", sent[i].name, "--seed", std::to_string(seed)};
    if (!kernels.empty()) commands[i].insert(commands[i].end(), {"--kernels", kernels});
  }
  const std::string log_prefix =
      (std::filesystem::temp_directory_path() / ("kvc-probe-" + std::to_string(getpid()) + "-")).string();
  try {
    run_children_in_order(commands, log_prefix, jobs, timeout, [&](std::size_t i, const ChildRun* child, double s) {
      if (child != nullptr) {
        inputs[i].child = child->outcome;
        inputs[i].observed = child->observed;
        if (child->outcome.reported) report.rows[i].status = child->observed.status;
        report.rows[i].seconds = s;
      }
      report.rows[i].verdict = testkit::classify_probe(inputs[i]);
      std::printf("%s", probe_row_line(report.rows[i]).c_str());
      std::fflush(stdout);
    });
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "kvconform probe: %s\n", e.what());
    return kProbeUsage;
  }
  std::printf("\n%s", probe_summary(report).c_str());

  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::binary);
    f << probe_to_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!f) {
      std::fprintf(stderr, "kvconform probe: cannot write %s\n", json_path.c_str());
      return kProbeUsage;
    }
  }
  return kProbeClassified;
}

int ProbeCommand::State::probe_one() {
  if (const std::string why = device_backend_unavailable(); !why.empty()) {
    std::fprintf(stderr, "kvconform probe-one: %s\n", why.c_str());
    return kProbeNoDevice;
  }
  std::vector<ProbeCell> cells = probe_cells(seed);
  const ProbeCell* cell = nullptr;
  for (const ProbeCell& c : cells)
    if (c.name == cell_name) cell = &c;
  if (cell == nullptr || !cell->not_sent.empty()) {
    std::fprintf(stderr, "kvconform probe-one: no cell '%s' to send\n", cell_name.c_str());
    return kProbeUsage;
  }
  testkit::ProbeObservation observed;
  try {
    ProbeLibrary library(kernels);
    observed = library.send(*cell);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvconform probe-one: %s\n", e.what());
    return EXIT_FAILURE;
  }
  // On a line of its own, whatever the library left unterminated on stdout.
  std::printf("\n%s%s\n", testkit::kProbeResultMarker,
              testkit::probe_observation_to_json(observed)
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  .c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  // The call is observed; what a faulted CUDA context or the library does at teardown is no part of it.
  std::_Exit(EXIT_SUCCESS);
}

}  // namespace kvc::runner
