// stacked_suite.h: the kernel library's stacked context-KV projection (kvc_stacked_ctx_kv,
// docs/contract.md §4.5) against the oracle, through testkit's StackedCtxKvDevice.
//
//   stacked  the stacked registry (testkit/cases/stacked_ctx_kv_registry.h), trimmed by
//            --max-tokens:
//            - <shape>_ExactOrder, upstream and production shapes: the exact-order GEMM on the
//              AUTO path (which must take the stacked path: every such shape is eligible and is
//              handed stacked parameters) and on the per-layer path; each path's pools and stored
//              projection equal the oracle's byte for byte (the pools compared by
//              testkit::diff_stacked_pools) on every token, or on sample_tokens() of the shapes
//              the oracle cannot run whole (StackedSpec::sampled()).
//            - <shape>_AnyOrder: the library's fastest GEMM on the AUTO path: its projection
//              within the ulp budget of the oracle's (testkit::compare_projection_under_budget),
//              and its pools exactly the oracle's epilogue of that projection.
//            - <scenario>_AutoFallsBack, the eligibility scenarios: AUTO, handed stacked
//              parameters whenever they can be built, takes the per-layer path and writes the
//              oracle's bytes.
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
