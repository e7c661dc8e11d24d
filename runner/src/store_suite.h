// store_suite.h: the kernel library's store op (kvc_store_rotated, docs/contract.md §6.4) against
// the oracle.
//
//   store  every packed scenario of the KV-only kernel matrix (cases::kernel_matrix, trimmed by
//          --max-tokens and --formats), its rows rotated and rounded by the oracle
//          (oracle::store_case_of), stored twice: into the scenario's own cache with int64 indices
//          (then a second run must write the same bytes), and into SGLang's 2-D cache
//          [pages, ceil(record * bs / 576) * 576] with int32 indices (testkit's store-case
//          builder), each laid out in the geometry the library declares where the contract
//          allows it (testkit/cases/declared_store_layout.h: a library with SGLang's geometry gets
//          both on SGLang's cache). Each judged by testkit's judge (testkit/compare/judge.h): the status, and the
//          whole backing, canary included, against the oracle's store op under the profile the
//          library declares for the store op (or --profile), with the policy report on a
//          difference; guard zones intact, inputs unchanged; a 402 for a case inside the declared
//          support fails with the library's message. Skipped with the reason when the library
//          does not export kvc_store_rotated, declares the format unsupported, or declares limits
//          no layout of the case meets (a block size), naming the limit.
// Built with the device backend only.
#pragma once

#include "run_options.h"
#include "testkit/device/device_backend.h"

namespace kvc::runner {

void store_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink);

}  // namespace kvc::runner
