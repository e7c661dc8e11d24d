// stacked_suite.cpp: see stacked_suite.h.
#include "stacked_suite.h"

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_suite_support.h"
#include "stopwatch.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "testkit/device/stacked_ctx_kv_checks.h"
#include "testkit/device/stacked_ctx_kv_device.h"

namespace kvc::runner {
namespace {

struct StackedCell {
  std::string name;
  testkit::StackedCtxKvShape shape;
  bool sampled = false;  // the oracle checks sample_tokens() only
  testkit::StackedCheck check = testkit::StackedCheck::kExactOrder;
  const cases::EligibilityScenario* scenario = nullptr;  // kAutoFallsBack
};

// The tokens the oracle judges: every one (empty), or the sample of a case too large for it; the
// any-order check samples with the next seed.
std::vector<std::int64_t> judged_tokens(const StackedCell& cell, const StackedCtxKvCase& c) {
  if (!cell.sampled) return {};
  const std::uint64_t seed = cell.shape.seed + (cell.check == testkit::StackedCheck::kAnyOrder ? 1 : 0);
  return testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, seed);
}

std::vector<StackedCell> cells(const RunOptions& options) {
  std::vector<StackedCell> out;
  if (!options.selects(AbiOp::kStackedCtxKv)) return out;
  std::vector<const std::vector<cases::StackedSpec>*> matrices = {
      &cases::stacked_upstream_matrix(), &cases::stacked_production_matrix(), &cases::stacked_policy_matrix()};
  for (const std::vector<cases::StackedSpec>* family : cases::stacked_v3_families()) matrices.push_back(family);
  for (const std::vector<cases::StackedSpec>* matrix : matrices)
    for (const cases::StackedSpec& spec : *matrix)
      if (options.within_tokens(spec.shape.tokens))
        for (testkit::StackedCheck k : {testkit::StackedCheck::kExactOrder, testkit::StackedCheck::kAnyOrder})
          out.push_back({spec.name, spec.shape, spec.sampled(), k, nullptr});
  for (const cases::EligibilityScenario& s : cases::stacked_eligibility_matrix())
    if (options.within_tokens(s.shape.tokens))
      out.push_back({s.name, s.shape, false, testkit::StackedCheck::kAutoFallsBack, &s});
  return out;
}

}  // namespace

void stacked_suite(const RunOptions& options, const testkit::KernelLibrary& library, const RunSink& sink) {
  const std::vector<StackedCell> all = cells(options);
  sink.begin_suite("kernel stacked: the stacked context-KV projection against the oracle", all.size());
  if (all.empty()) return;
  testkit::StackedCtxKvDevice device(library);
  device.set_profile_override(options.stacked_profile);  // else each run's path's declaration
  for (const StackedCell& cell : all) {
    const Stopwatch clock;
    // The storage dtype is x's, the shape's in every cell (an ineligible layer changes its own
    // weights only): known before the case is built, which a resumed process skips.
    CheckResult r = kernel_check(kSuiteStacked, std::string(abi_op_name(AbiOp::kStackedCtxKv)),
                                 cell.shape.dtype == DType::kF16 ? "fp16" : "bf16",
                                 cell.name + testkit::stacked_check_suffix(cell.check));
    if (!sink.starts(r)) continue;
    const StackedCtxKvCase c =
        cell.scenario ? cases::build_eligibility_case(*cell.scenario) : testkit::make_stacked_ctx_kv_case(cell.shape);
    r.add_bytes(AbiOp::kStackedCtxKv, 0);
    judge_library_call(r, [&] {
      try {
        if (const testkit::Support s = device.supports(c); !s.supported) {
          skip(r, s.reason);
        } else {
          record_verdict(r, AbiOp::kStackedCtxKv,
                         testkit::check_stacked(device, c, cell.check, judged_tokens(cell, c),
                                                "kvconform run --ops stacked_ctx_kv --suites stacked"),
                         true);
        }
      } catch (const testkit::StackedGemmUnsupported& e) {
        skip(r, e.what());  // nothing was judged: no byte counts as compared
      }
    });
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

}  // namespace kvc::runner
