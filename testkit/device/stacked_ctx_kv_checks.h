// stacked_ctx_kv_checks.h: the stacked projection's conformance checks, in one place for the GPU
// suite (gpu_stacked_ctx_kv_test) and the runner (`kvconform run --suites stacked`). Each runs the
// library through StackedCtxKvDevice and returns the stacked judge's verdict
// (testkit/compare/stacked_ctx_kv_judge.h):
//   kExactOrder     the exact-order GEMM on the AUTO path (an eligible model handed stacked
//                   parameters: it must take the stacked path, or the fused path when the model is
//                   eligible for it and the library implements it), on the per-layer path and, on
//                   a fused-eligible model, on the forced fused path (skipped when the library
//                   answers KVC_STATUS_UNSUPPORTED for it): pools
//                   and stored projection the oracle's, byte for byte (on a sample of the tokens of
//                   a case too large for the oracle, and the two paths equal on every token);
//   kAnyOrder       the library's fastest GEMM on both paths: the projection within the ulp
//                   budget, the pools exactly the oracle's epilogue of it;
//   kAutoFallsBack  an ineligible model handed stacked parameters whenever they can be built:
//                   AUTO must take the per-layer path (the library, not their absence, decides)
//                   and write the oracle's pools.
// Every run is judged under the stacked profile of the path it took (StackedCtxKvDevice::
// judged_profile: the library's declaration, or the caller's override), on the case laid out for
// the per-layer path's cache_loc policy (slot 0 reserved: skipped tokens at 0).
// A library that answers KVC_STATUS_UNSUPPORTED for the GEMM asked for (the ABI allows it for the
// exact order) throws StackedGemmUnsupported: the caller skips. Damage and other call errors throw
// what StackedCtxKvDevice throws.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"
#include "testkit/compare/verdict.h"
#include "testkit/device/stacked_ctx_kv_device.h"

namespace kvc::testkit {

enum class StackedCheck : std::uint8_t { kExactOrder = 0, kAnyOrder = 1, kAutoFallsBack = 2 };

// "_ExactOrder", "_AnyOrder", "_AutoFallsBack": the check's suffix in test and report names.
const char* stacked_check_suffix(StackedCheck k);

class StackedGemmUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs `check` on case `c` through `device`. `sampled_tokens` empty: the oracle judges every
// token; else those (sample_tokens()). `reproduce` ends a failure's report.
Verdict check_stacked(StackedCtxKvDevice& device, const StackedCtxKvCase& c, StackedCheck check,
                      const std::vector<std::int64_t>& sampled_tokens, const std::string& reproduce);

// One run of `c` through `device` as the judge takes it (the projection read), named `name`.
StackedRun run_stacked(StackedCtxKvDevice& device, const StackedCtxKvCase& c, StackedDeviceOptions options,
                       const std::string& name);

}  // namespace kvc::testkit
