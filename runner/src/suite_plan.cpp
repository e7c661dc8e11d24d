// suite_plan.cpp: see suite_plan.h.
#include "suite_plan.h"

namespace kvc::runner {

std::vector<SuiteRef> planned_suites(const RunOptions& options, bool with_kernels) {
  std::vector<SuiteRef> out;
  for (const char* suite : kOracleSuites)
    if (options.selects_suite(suite)) out.push_back({kOracleSide, suite});
  if (with_kernels)
    for (const char* suite : kKernelSuites)
      if (options.selects_suite(suite)) out.push_back({kKernelSide, suite});
  return out;
}

std::optional<SuiteRef> suite_from_key(std::string_view key) {
  const std::size_t colon = key.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view side = key.substr(0, colon), name = key.substr(colon + 1);
  if (side == kOracleSide) {
    for (const char* suite : kOracleSuites)
      if (name == suite) return SuiteRef{kOracleSide, suite};
  } else if (side == kKernelSide) {
    for (const char* suite : kKernelSuites)
      if (name == suite) return SuiteRef{kKernelSide, suite};
  }
  return std::nullopt;
}

}  // namespace kvc::runner
