// main.cpp: kvconform-golden, the golden-fixture generator.
//
//   kvconform-golden --out DIR            probe torch, then write every fixture into DIR
//   kvconform-golden --out DIR --only N   only the named fixtures (repeatable)
//   kvconform-golden --list               the catalog
//   kvconform-golden --probe              the probes alone
//
// Exit status: 0 done, 1 an error (message on stderr), 2 usage, 3 a probe failed (torch does not
// behave as the generator's arithmetic assumes; nothing was written).
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <set>

#include "expected_bytes.h"
#include "fixture_catalog.h"
#include "manifest_writer.h"
#include "probes.h"

namespace {

// The canary the expected backings start from (the upstream test's fill), recorded in each
// manifest so that a reader prefills the same way.
constexpr std::uint8_t kCanary = 0xA5;

}  // namespace

int main(int argc, char** argv) {
  using namespace kvc::golden_generator;
  CLI::App app{"kvconform-golden: golden fixtures for the kvconform insert ops, computed with libtorch"};
  std::string out;
  std::vector<std::string> only;
  bool list = false, probe_only = false;
  app.add_option("--out", out, "directory to write NAME.json and NAME.bin into");
  app.add_option("--only", only, "write only these fixtures (names as --list prints them)");
  app.add_flag("--list", list, "print the catalog and exit");
  app.add_flag("--probe", probe_only, "run the probes and exit");
  CLI11_PARSE(app, argc, argv);

  const std::vector<FixtureSpec> catalog = fixture_catalog();
  if (list) {
    for (const FixtureSpec& s : catalog) std::printf("%-36s %s\n", s.name.c_str(), s.description.c_str());
    return 0;
  }
  if (out.empty() && !probe_only) {
    std::fprintf(stderr, "kvconform-golden: --out DIR is required (or --list, --probe)\n");
    return 2;
  }
  const std::set<std::string> wanted(only.begin(), only.end());
  for (const std::string& name : wanted) {
    bool known = false;
    for (const FixtureSpec& s : catalog) known = known || s.name == name;
    if (!known) {
      std::fprintf(stderr, "kvconform-golden: no fixture named %s (see --list)\n", name.c_str());
      return 2;
    }
  }

  try {
    torch::set_num_threads(1);  // determinism does not need it, but a single thread keeps runs comparable
    RunInfo run;
    run.torch_version = TORCH_VERSION;
    std::printf("kvconform-golden %s with libtorch %s\n", kGeneratorVersion, run.torch_version.c_str());
    run.probes = run_probes();
    for (const std::string& line : run.probes.passed) std::printf("  probe passed: %s\n", line.c_str());
    std::printf("  e4m3: %s\n", run.probes.e4m3_path.c_str());
    if (probe_only) return 0;

    std::filesystem::create_directories(out);
    std::size_t total = 0, written = 0;
    for (const FixtureSpec& spec : catalog) {
      if (!wanted.empty() && wanted.count(spec.name) == 0) continue;
      const GenCase c = build_case(spec);
      const GenExpected expected = compute_expected(c, kCanary);
      const std::size_t bytes = write_fixture(out, spec, c, expected, run);
      std::printf("  %-36s %8zu bytes\n", spec.name.c_str(), bytes);
      total += bytes;
      ++written;
    }
    std::printf("wrote %zu fixtures, %zu payload bytes, into %s\n", written, total, out.c_str());
    return 0;
  } catch (const ProbeFailure& e) {
    std::fprintf(stderr, "kvconform-golden: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvconform-golden: %s\n", e.what());
    return 1;
  }
}
