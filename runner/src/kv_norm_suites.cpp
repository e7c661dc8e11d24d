// kv_norm_suites.cpp: see kv_norm_suites.h.
#include "kv_norm_suites.h"

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_suite_support.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_norm.h"
#include "stopwatch.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/registry.h"
#include "testkit/compare/approx_rsqrt.h"

namespace kvc::runner {
namespace {

constexpr float kKvNormEps = 1e-6f;
// Row counts around the warp (32) and block sizes the kernels use, and one large count.
constexpr std::int64_t kKvNormRows[] = {0, 1, 17, 1023, 1024, 1025, 65536};

// A kv_norm weight near 1, drawn from `rng`: bf16(1 + N(0, 1) / 4).
HostTensor kv_norm_weight(testkit::Rng& rng) {
  std::vector<std::uint16_t> w(kHeadDim);
  for (auto& x : w) x = oracle::float_to_bf16(1.0f + 0.25f * rng.normal());
  return make_tensor_from(DType::kBF16, w, {kHeadDim});
}

void kv_norm_check(const RunOptions& options, testkit::DeviceBackend& device, std::int64_t rows, bool in_place,
                   CheckResult& r) {
  r.add_bytes(AbiOp::kKvNorm, 0);
  if (const testkit::Support s = device.supports_kv_norm(); !s.supported) {
    skip(r, s.reason);
    return;
  }
  testkit::Rng rng(static_cast<std::uint64_t>(rows) * 7 + 1);
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, rows), {rows, kHeadDim});
  const HostTensor weight = kv_norm_weight(rng);
  std::vector<std::uint16_t> expected, actual;
  if (const Status s = oracle::kv_norm(kv, weight, kKvNormEps, &expected); !s.ok()) {
    fail(r, "the oracle rejected the kv_norm case: " + s.ToString());
    return;
  }
  try {
    if (const Status s = device.kv_norm(kv, weight, kKvNormEps, &actual, in_place); !s.ok()) {
      fail(r, "the library rejected a valid kv_norm call: " + s.ToString());
      return;
    }
  } catch (const testkit::BufferDamageError& e) {
    record_damage(r, e.what());
    return;
  } catch (const testkit::KernelCallError& e) {
    fail(r, std::string("kernel call failed: ") + e.what());
    return;
  }
  const RsqrtMode mode = options.profile ? options.profile->rsqrt : device.kv_norm_rsqrt_mode();
  const testkit::ApproxRsqrtResult result =
      testkit::compare_kv_norm_under_rsqrt_mode(kv, weight, kKvNormEps, mode, expected, actual);
  r.add_bytes(AbiOp::kKvNorm, static_cast<std::int64_t>(actual.size() * sizeof(std::uint16_t)));
  r.rsqrt.add(result);
  if (!result.accepted) fail(r, "kv_norm outputs differ from the oracle's\n" + result.report);
}

}  // namespace

void kv_norm_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<std::pair<std::int64_t, bool>> cells;
  if (options.selects(AbiOp::kKvNorm))
    for (std::int64_t rows : kKvNormRows)
      if (options.within_tokens(rows))
        for (bool in_place : {false, true}) cells.push_back({rows, in_place});
  sink.begin_suite("kernel kv_norm: the standalone kv_norm against the oracle, out of place and in place",
                   cells.size());
  for (const auto& [rows, in_place] : cells) {
    const Stopwatch clock;
    CheckResult r = kernel_check(kSuiteKvNorm, std::string(abi_op_name(AbiOp::kKvNorm)), "-",
                                 "Rows" + std::to_string(rows) + (in_place ? "_InPlace" : "_OutOfPlace"));
    if (!sink.starts(r)) continue;
    kv_norm_check(options, device, rows, in_place, r);
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

void fused_kv_norm_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<cases::ConformanceSpec> specs;
  if (options.selects(AbiOp::kKvOnlyKvNorm))
    for (const cases::ConformanceSpec& spec : cases::kernel_matrix(InsertOp::kKvOnly))
      if (options.selects(spec.format) && options.within_tokens(spec.tokens)) specs.push_back(spec);
  sink.begin_suite("kernel fused_kv_norm: the KV-only matrix with kv_norm fused in front, against the oracle",
                   specs.size());
  for (const cases::ConformanceSpec& spec : specs) {
    const Stopwatch clock;
    CheckResult r = kernel_check(kSuiteFusedKvNorm, std::string(abi_op_name(AbiOp::kKvOnlyKvNorm)),
                                 format_key(spec.format), spec.name());
    if (!sink.starts(r)) continue;
    InsertCase c = cases::build_kv_only(spec, 0);
    testkit::Rng rng(spec.seed + 11);
    c.kv_norm_weight = cases::place_kv_norm_weight(spec, kv_norm_weight(rng));
    c.kv_norm_eps = kKvNormEps;
    if (const testkit::Support s = device.supports(c); !s.supported) {
      r.add_bytes(AbiOp::kKvOnlyKvNorm, 0);
      skip(r, s.reason);
    } else {
      check_insert(device, options.profile, c, false, r);
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

}  // namespace kvc::runner
