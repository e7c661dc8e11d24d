// stacked_suite.cpp: see stacked_suite.h.
#include "stacked_suite.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_suite_support.h"
#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_fp64.h"
#include "stopwatch.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"
#include "testkit/device/stacked_ctx_kv_device.h"

namespace kvc::runner {
namespace {

enum class StackedCheck : std::uint8_t { kExactOrder, kAnyOrder, kAutoFallsBack };

struct StackedCell {
  std::string name;
  testkit::StackedCtxKvShape shape;
  bool sampled = false;  // the oracle checks sample_tokens() only
  StackedCheck check = StackedCheck::kExactOrder;
  const cases::EligibilityScenario* scenario = nullptr;  // kAutoFallsBack
};

struct DeviceResult {
  StackedCtxKvOutputs pools;
  testkit::StackedDeviceRun run;
};

// The library answered KVC_STATUS_UNSUPPORTED for the GEMM asked for (the ABI allows it for the
// exact order): the check is skipped, not failed.
class GemmUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The library's run of `c`; throws what StackedCtxKvDevice throws, and GemmUnsupported.
Status run_device(testkit::StackedCtxKvDevice& device, const StackedCtxKvCase& c, testkit::StackedDeviceOptions o,
                  DeviceResult& result) {
  result.pools = testkit::make_stacked_outputs(c);
  o.read_projection = true;
  try {
    return device.run(c, result.pools, o, &result.run);
  } catch (const testkit::KernelCallError& e) {
    if (result.run.checks.abi_status != KVC_STATUS_UNSUPPORTED) throw;
    throw GemmUnsupported(std::string("the library does not implement the ") + testkit::gemm_name(o.gemm) +
                          " GEMM (KVC_STATUS_UNSUPPORTED): " + result.run.checks.abi_message);
  }
}

struct OracleResult {
  StackedCtxKvOutputs pools;
  std::vector<std::uint16_t> projection;
};

std::optional<OracleResult> run_oracle(const StackedCtxKvCase& c, CheckResult& r) {
  OracleResult o;
  o.pools = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvRun run;
  if (const Status s = oracle::stacked_ctx_kv(c, o.pools, {}, &run); !s.ok()) {
    fail(r, "the oracle rejected a registry case: " + s.ToString());
    return std::nullopt;
  }
  o.projection = std::move(run.projection);
  return o;
}

// Rows `tokens` of a [T, width] projection.
std::vector<std::uint16_t> projection_rows(const std::vector<std::uint16_t>& p, std::int64_t width,
                                           const std::vector<std::int64_t>& tokens) {
  std::vector<std::uint16_t> rows;
  for (std::int64_t t : tokens) rows.insert(rows.end(), p.begin() + t * width, p.begin() + (t + 1) * width);
  return rows;
}

// The pools against `expected`, recorded in `r`: the bytes compared, the report on a difference.
void compare_pools(const StackedCtxKvCase& c, const StackedCtxKvOutputs& expected, const StackedCtxKvOutputs& actual,
                   const std::string& expected_name, const std::string& actual_name, CheckResult& r) {
  const testkit::StackedDiffReport d = testkit::diff_stacked_pools(c, expected, actual);
  r.add_bytes(AbiOp::kStackedCtxKv, d.compared_elements * 2);
  if (!d.equal())
    fail(r, testkit::format_stacked_report(c, d, expected_name, actual_name,
                                           "kvconform run --ops stacked_ctx_kv --suites stacked"));
}

// The stored projection against the oracle's, byte for byte.
void compare_projection(const std::vector<std::uint16_t>& expected, const std::vector<std::uint16_t>& actual,
                        std::int64_t width, const std::string& actual_name, CheckResult& r) {
  r.add_bytes(AbiOp::kStackedCtxKv, static_cast<std::int64_t>(std::min(expected.size(), actual.size()) * 2));
  if (expected.size() != actual.size()) {
    fail(r, actual_name + ": projection of " + std::to_string(actual.size()) + " elements, the oracle's " +
                std::to_string(expected.size()));
    return;
  }
  std::int64_t differ = 0, first = -1;
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i]) {
      ++differ;
      if (first < 0) first = static_cast<std::int64_t>(i);
    }
  if (differ > 0)
    fail(r, actual_name + ": " + std::to_string(differ) + " projection elements differ from the oracle's, the first " +
                "at token " + std::to_string(first / width) + " column " + std::to_string(first % width));
}

void exact_order(testkit::StackedCtxKvDevice& device, const StackedCtxKvCase& c, const StackedCell& cell,
                 CheckResult& r) {
  const std::vector<std::int64_t> tokens =
      cell.sampled ? testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, cell.shape.seed)
                   : std::vector<std::int64_t>{};
  const StackedCtxKvCase judged = cell.sampled ? testkit::with_tokens(c, tokens) : c;
  const std::optional<OracleResult> expected = run_oracle(judged, r);
  if (!expected) return;
  for (StackedPathRequest path : {StackedPathRequest::kAuto, StackedPathRequest::kPerLayer}) {
    testkit::StackedDeviceOptions o;
    o.path = path;
    o.gemm = testkit::StackedGemm::kExactOrder;
    DeviceResult d;
    if (const Status s = run_device(device, c, o, d); !s.ok()) {
      fail(r, "the library rejected a valid case: " + s.ToString());
      return;
    }
    const std::string name = std::string("device ") + (path == StackedPathRequest::kAuto ? "AUTO" : "per-layer");
    if (path == StackedPathRequest::kAuto && d.run.path != StackedPath::kStacked)
      fail(r, "AUTO took the per-layer path on an eligible model handed stacked parameters");
    if (cell.sampled) {
      compare_pools(judged, expected->pools, testkit::pools_at_written_slots(judged, d.pools),
                    "oracle (sampled tokens)", name, r);
      compare_projection(expected->projection, projection_rows(d.run.projection, c.projection_width(), tokens),
                         c.projection_width(), name, r);
    } else {
      compare_pools(c, expected->pools, d.pools, "oracle", name, r);
      compare_projection(expected->projection, d.run.projection, c.projection_width(), name, r);
    }
  }
}

void any_order(testkit::StackedCtxKvDevice& device, const StackedCtxKvCase& c, const StackedCell& cell,
               CheckResult& r) {
  const std::vector<std::int64_t> tokens =
      cell.sampled ? testkit::sample_tokens(c.num_tokens(), cases::kStackedSampledRandomTokens, cell.shape.seed + 1)
                   : std::vector<std::int64_t>{};
  const StackedCtxKvCase judged = cell.sampled ? testkit::with_tokens(c, tokens) : c;
  const std::optional<OracleResult> expected = run_oracle(judged, r);
  if (!expected) return;
  testkit::StackedDeviceOptions o;
  o.gemm = testkit::StackedGemm::kAnyOrder;
  DeviceResult d;
  if (const Status s = run_device(device, c, o, d); !s.ok()) {
    fail(r, "the library rejected a valid case: " + s.ToString());
    return;
  }
  const std::vector<std::uint16_t> judged_projection =
      cell.sampled ? projection_rows(d.run.projection, c.projection_width(), tokens) : d.run.projection;
  const testkit::ProjectionBudgetReport b = testkit::compare_projection_under_budget(
      judged, expected->projection, judged_projection, oracle::stacked_ctx_kv_projection_fp64(judged));
  r.add_bytes(AbiOp::kStackedCtxKv, b.compared * 2);
  const std::string name = std::string("device any-order GEMM, ") + path_name(d.run.path) + " path";
  if (!b.within()) fail(r, testkit::format_budget_report(judged, b, name));
  // Every token: the pools are the oracle's epilogue of the device's own projection.
  StackedCtxKvOutputs epilogue = testkit::make_stacked_outputs(c);
  if (const Status s = oracle::stacked_ctx_kv_epilogue(c, d.run.projection, epilogue); !s.ok()) {
    fail(r, "the oracle's epilogue rejected the device projection: " + s.ToString());
    return;
  }
  compare_pools(c, epilogue, d.pools, "oracle epilogue of the device projection", name, r);
}

void auto_falls_back(testkit::StackedCtxKvDevice& device, const StackedCtxKvCase& c, CheckResult& r) {
  const std::optional<OracleResult> expected = run_oracle(c, r);
  if (!expected) return;
  testkit::StackedDeviceOptions o;
  // Stacked parameters whenever they can be built: the library, not their absence, must decide.
  o.stacked_params = testkit::StackedParamsPolicy::kWheneverBuildable;
  DeviceResult d;
  if (const Status s = run_device(device, c, o, d); !s.ok()) {
    fail(r, "the library rejected a valid case: " + s.ToString());
    return;
  }
  if (d.run.path != StackedPath::kPerLayer)
    fail(r, "AUTO took the stacked path on an ineligible model: " + stacked_ctx_kv_eligibility(c).to_string());
  compare_pools(c, expected->pools, d.pools, "oracle per-layer", "device AUTO", r);
}

const char* check_suffix(StackedCheck k) {
  switch (k) {
    case StackedCheck::kExactOrder: return "_ExactOrder";
    case StackedCheck::kAnyOrder: return "_AnyOrder";
    case StackedCheck::kAutoFallsBack: return "_AutoFallsBack";
  }
  return "";
}

std::vector<StackedCell> cells(const RunOptions& options) {
  std::vector<StackedCell> out;
  if (!options.selects(AbiOp::kStackedCtxKv)) return out;
  for (const std::vector<cases::StackedSpec>* matrix :
       {&cases::stacked_upstream_matrix(), &cases::stacked_production_matrix()})
    for (const cases::StackedSpec& spec : *matrix)
      if (options.within_tokens(spec.shape.tokens))
        for (StackedCheck k : {StackedCheck::kExactOrder, StackedCheck::kAnyOrder})
          out.push_back({spec.name, spec.shape, spec.sampled(), k, nullptr});
  for (const cases::EligibilityScenario& s : cases::stacked_eligibility_matrix())
    if (options.within_tokens(s.shape.tokens))
      out.push_back({s.name, s.shape, false, StackedCheck::kAutoFallsBack, &s});
  return out;
}

}  // namespace

void stacked_suite(const RunOptions& options, const testkit::KernelLibrary& library, const RunSink& sink) {
  const std::vector<StackedCell> all = cells(options);
  sink.begin_suite("kernel stacked: the stacked context-KV projection against the oracle", all.size());
  if (all.empty()) return;
  testkit::StackedCtxKvDevice device(library);
  for (const StackedCell& cell : all) {
    const Stopwatch clock;
    // The storage dtype is x's, the shape's in every cell (an ineligible layer changes its own
    // weights only): known before the case is built, which a resumed process skips.
    CheckResult r =
        kernel_check(kSuiteStacked, std::string(abi_op_name(AbiOp::kStackedCtxKv)),
                     cell.shape.dtype == DType::kF16 ? "fp16" : "bf16", cell.name + check_suffix(cell.check));
    if (!sink.starts(r)) continue;
    const StackedCtxKvCase c =
        cell.scenario ? cases::build_eligibility_case(*cell.scenario) : testkit::make_stacked_ctx_kv_case(cell.shape);
    r.add_bytes(AbiOp::kStackedCtxKv, 0);
    judge_library_call(r, [&] {
      try {
        if (const testkit::Support s = device.supports(c); !s.supported) {
          skip(r, s.reason);
        } else if (cell.check == StackedCheck::kExactOrder) {
          exact_order(device, c, cell, r);
        } else if (cell.check == StackedCheck::kAnyOrder) {
          any_order(device, c, cell, r);
        } else {
          auto_falls_back(device, c, r);
        }
      } catch (const GemmUnsupported& e) {
        if (r.verdict == Verdict::kFailed) {
          fail(r, e.what());
        } else {
          r.bytes_by_op[AbiOp::kStackedCtxKv] = 0;  // a skipped check compared nothing
          skip(r, e.what());
        }
      }
    });
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

}  // namespace kvc::runner
