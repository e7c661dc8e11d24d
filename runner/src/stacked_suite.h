// stacked_suite.h: the kernel library's stacked context-KV projection (kvc_stacked_ctx_kv,
// docs/contract.md §4.5) against the oracle, through testkit's StackedCtxKvDevice.
//
//   stacked  the stacked registry (testkit/cases/stacked_ctx_kv_registry.h), trimmed by
//            --max-tokens: <shape>_ExactOrder and <shape>_AnyOrder on the upstream, production and
//            policy-sensitive shapes, <scenario>_AutoFallsBack on the eligibility scenarios. Each is
//            testkit::check_stacked (testkit/device/stacked_ctx_kv_checks.h), the checks
//            gpu_stacked_ctx_kv_test runs, judged by the stacked judge
//            (testkit/compare/stacked_ctx_kv_judge.h); the production shapes the oracle cannot
//            run whole are judged at sample_tokens() (StackedSpec::sampled()).
//            Each run is judged under the stacked policies the library declares for the path it
//            took (op 4: per-layer and stacked, op 6: fused), each case laid out for the
//            per-layer path's cache_loc policy; --stacked-profile judges every run under one
//            spec instead. Each check's report names the profile and where it came from.
//            A library that does not export the entry point or declares the dtype unsupported
//            is skipped with the reason; one that answers KVC_STATUS_UNSUPPORTED for a GEMM
//            (the ABI allows it for the exact order) has that check skipped.
// Built with the device backend only.
#pragma once

#include "run_options.h"
#include "testkit/device/kernel_library.h"

namespace kvc::runner {

void stacked_suite(const RunOptions& options, const testkit::KernelLibrary& library, const RunSink& sink);

}  // namespace kvc::runner
