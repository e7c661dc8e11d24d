// store_suite.h: the kernel library's store op (kvc_store_rotated, docs/contract.md §6.4) against
// the oracle.
//
//   store  every packed scenario of the KV-only kernel matrix (cases::kernel_matrix, trimmed by
//          --max-tokens and --formats), its rows rotated and rounded by the oracle
//          (oracle::store_case_of), stored twice: into the scenario's own cache with int64 indices
//          (then a second run must write the same bytes), and into SGLang's 2-D cache
//          [pages, ceil(record * bs / 576) * 576] with int32 indices (testkit's store-case
//          builder). Each judged by testkit's judge (testkit/compare/judge.h): the status, and
//          the whole backing, canary included, against the oracle's store op under the profile
//          the library declares for the store op (or --profile), with the policy report on a
//          difference; guard zones intact, inputs unchanged. Skipped with the reason when the library does
//          not export kvc_store_rotated or declares the format unsupported.
// Built with the device backend only.
#pragma once

#include "run_options.h"
#include "testkit/device/device_backend.h"

namespace kvc::runner {

void store_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink);

}  // namespace kvc::runner
