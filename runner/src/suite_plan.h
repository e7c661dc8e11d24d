// suite_plan.h: the suites a run makes, in order, each named by where it runs and what it is.
//
// "golden" and "invalid" are suites of both sides (the oracle's CPU conformance and the kernel
// library's), so a suite is its side and its name: "oracle:golden", "kernel:matrix". Every suite
// runs in a process of its own (suite_children.h); the key names the suite on that process's
// command line (`kvconform run --child-suite kernel:matrix`).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run_options.h"
#include "run_report.h"

namespace kvc::runner {

// The suites of each side, in the order a run makes them.
inline constexpr std::array<const char*, 4> kOracleSuites = {kSuiteGolden, kSuiteInvalid, kSuiteRegistry,
                                                             kSuiteChecker};
inline constexpr std::array<const char*, 8> kKernelSuites = {kSuiteMatrix,  kSuiteDspark, kSuiteGolden,
                                                             kSuiteInvalid, kSuiteKvNorm, kSuiteFusedKvNorm,
                                                             kSuiteStore,   kSuiteStacked};

struct SuiteRef {
  std::string side;  // kOracleSide or kKernelSide
  std::string name;  // kSuiteGolden, ...

  std::string key() const { return side + ":" + name; }    // "kernel:matrix"
  std::string title() const { return side + " " + name; }  // "kernel matrix", for incidents
  bool operator==(const SuiteRef& other) const { return side == other.side && name == other.name; }
};

// The oracle's suites --suites selects, then, when `with_kernels`, the kernel library's.
std::vector<SuiteRef> planned_suites(const RunOptions& options, bool with_kernels);

// "kernel:matrix" -> the suite; nullopt for a side or a name that is not one of the lists above.
std::optional<SuiteRef> suite_from_key(std::string_view key);

}  // namespace kvc::runner
