// kv_norm_suites.h: the kernel library's kv_norm, standalone and fused, against the oracle.
//
//   kv_norm        kvc_kv_norm on 0, 1, 17, 1023, 1024, 1025 and 65536 rows (around the warp and
//                  block sizes; --max-tokens trims the row counts), out of place and in place (out
//                  aliasing kv): the outputs equal oracle::kv_norm byte for byte, or row by row
//                  within the declared approximate-rsqrt window (testkit/compare/approx_rsqrt.h);
//                  guard zones intact, inputs unchanged.
//   fused_kv_norm  every KV-only scenario of the kernel matrix (cases::kernel_matrix, trimmed by
//                  --max-tokens and --formats) with a kv_norm weight: the insert with kv_norm fused
//                  in front, judged as the matrix judges the plain insert (check_insert).
// Built with the device backend only.
#pragma once

#include "run_options.h"
#include "testkit/device/device_backend.h"

namespace kvc::runner {

void kv_norm_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink);
void fused_kv_norm_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink);

}  // namespace kvc::runner
