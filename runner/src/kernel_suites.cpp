// kernel_suites.cpp: kernel conformance through the device backend (see kernel_suites.h): the
// session, and the suites of the two inserts (matrix, dspark, golden, invalid).
#include "kernel_suites.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "abi_op.h"
#include "fixture_verdict.h"
#include "kernel_suite_support.h"
#include "kv_norm_suites.h"
#include "kvc/golden/fixture.h"
#include "kvc/resolved_case.h"
#include "kvc/validate.h"
#include "library_declarations.h"
#include "library_mentions.h"
#include "recording_backend.h"
#include "stacked_suite.h"
#include "stopwatch.h"
#include "store_suite.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/registry.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/kernel_library.h"

namespace kvc::runner {
namespace {

// The abi op of an insert: kKvOnly or kLegacy (the matrix and DSpark cases carry no kv_norm weight).
AbiOp abi_op(InsertOp op) { return op == InsertOp::kLegacy ? AbiOp::kLegacy : AbiOp::kKvOnly; }

void matrix_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<std::pair<InsertOp, cases::ConformanceSpec>> cells;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    if (!options.selects(abi_op(op))) continue;
    // The grid-loop scenarios are exempt from --max-tokens (cases::kGridLoopTokens).
    for (const cases::ConformanceSpec& spec : cases::kernel_matrix(op))
      if (options.selects(spec.format) && cases::within_token_limit(spec, options.max_tokens))
        cells.push_back({op, spec});
  }
  sink.begin_suite("kernel matrix: every op, format, token count, block size and page kind against the oracle",
                   cells.size());
  for (const auto& [op, spec] : cells) {
    const Stopwatch clock;
    CheckResult r = kernel_check(kSuiteMatrix, op_key(op), format_key(spec.format), spec.name());
    if (!sink.starts(r)) continue;
    const InsertCase c = cases::build_case(op, spec, 0);
    if (const testkit::Support s = device.supports(c); !s.supported) {
      r.add_bytes(abi_op_of(c), 0);
      skip(r, s.reason);
    } else {
      check_insert(device, options.profile, c, true, r);
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

void dspark_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<cases::ConformanceSpec> specs;
  if (options.selects(AbiOp::kKvOnly) && options.selects(AbiOp::kLegacy))
    for (const cases::ConformanceSpec& spec : cases::conformance_matrix())
      if (options.selects(spec.format) && options.within_tokens(spec.tokens)) specs.push_back(spec);
  sink.begin_suite("kernel dspark: legacy (dummy query) and KV-only against the oracle, three rounds", specs.size());
  for (const cases::ConformanceSpec& spec : specs) {
    const Stopwatch clock;
    CheckResult r = kernel_check(kSuiteDspark, kBothOps, format_key(spec.format), "UpstreamDspark_" + spec.name());
    if (!sink.starts(r)) continue;
    r.add_bytes(AbiOp::kKvOnly, 0);
    r.add_bytes(AbiOp::kLegacy, 0);
    for (int round = 0; round < cases::kUpstreamRounds && r.verdict != Verdict::kFailed; ++round) {
      for (const InsertCase& c : {cases::build_kv_only(spec, round), cases::build_legacy(spec, round)}) {
        if (const testkit::Support s = device.supports(c); !s.supported) {
          skip(r, s.reason);
          break;
        }
        CheckResult one = r;
        one.message.clear();
        one.bytes_by_op.clear();
        one.rsqrt = {};
        check_insert(device, options.profile, c, false, one);
        for (const auto& [op, bytes] : one.bytes_by_op) r.add_bytes(op, bytes);
        r.rsqrt.merge(one.rsqrt);
        if (one.verdict == Verdict::kFailed) {
          fail(r, "round " + std::to_string(round) + ", " + op_key(c.op) + ":\n" + one.message);
          r.classes.merge(one.classes);
        }
      }
      if (r.verdict == Verdict::kSkipped) break;
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

void golden_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<golden::Fixture> fixtures;
  std::vector<CheckResult> problems;
  try {
    for (const std::string& path : golden::fixture_manifests(options.fixtures_dir)) {
      try {
        golden::Fixture f = golden::load_fixture(path);
        const std::optional<ResolvedInsertCase> resolved = resolve(f.c);
        if (options.selects(abi_op_of(f.c)) && resolved && options.selects(resolved->format) &&
            options.within_tokens(f.c.num_inserted()))
          fixtures.push_back(std::move(f));
      } catch (const golden::CorruptFixtureError& e) {
        CheckResult r = kernel_check(kSuiteGolden, "-", "-", std::filesystem::path(path).stem().string());
        fail(r, std::string("corrupt fixture: ") + e.what());
        problems.push_back(r);
      }
    }
  } catch (const std::exception& e) {
    CheckResult r = kernel_check(kSuiteGolden, "-", "-", "fixtures");
    fail(r, std::string("cannot list the fixtures: ") + e.what());
    problems.push_back(r);
  }
  sink.begin_suite("kernel golden: the frozen fixtures through the library", fixtures.size() + problems.size());
  for (CheckResult& r : problems)
    if (sink.starts(r)) sink.record(r);
  for (const golden::Fixture& f : fixtures) {
    const Stopwatch clock;
    CheckResult r = kernel_check(kSuiteGolden, op_key(f.c.op), f.record_format, f.name);
    if (!sink.starts(r)) continue;
    RecordingBackend recorder(device, options.profile);
    const AbiOp op = abi_op_of(f.c);
    r.add_bytes(op, 0);
    judge_library_call(r, [&] {
      judge_fixture(f, recorder, r);
      // A fixture the library ran is compared whole, backing and q_out; a rejection or a skip compares nothing.
      if (r.verdict != Verdict::kSkipped && device.last_checks().abi_called && recorder.last_status().ok())
        r.add_bytes(op, static_cast<std::int64_t>(recorder.last().cache.size() + recorder.last().q_out.size()));
    });
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

bool required_tensor_missing(const InsertCase& c) {
  return !c.kv.present || !c.slots.present || !c.positions.present || !c.cos_sin.present ||
         (c.op == InsertOp::kLegacy && !c.q.present);
}

void invalid_suite(const RunOptions& options, const testkit::KernelLibrary& library, const RunSink& sink) {
  std::vector<testkit::RuleMatrixEntry> cells;
  for (const testkit::RuleMatrixEntry& e : testkit::rule_matrix())
    if (options.selects(e.op) && options.selects(e.format)) cells.push_back(e);
  sink.begin_suite("kernel invalid: every validation rule broken alone, through the ABI", cells.size());
  for (const testkit::RuleMatrixEntry& e : cells) {
    const Stopwatch clock;
    CheckResult r = kernel_check(kSuiteInvalid, op_key(e.op), format_key(e.format), testkit::rule_matrix_name(e));
    if (!sink.starts(r)) continue;
    InsertCase c = testkit::small_valid_case(e.op, e.format);
    const InsertCase base = c;
    InsertOutputs out = testkit::make_outputs(c);
    testkit::DeviceBackendOptions direct;
    direct.host_validation = false;
    direct.throw_on_damage = false;
    testkit::DeviceBackend device(library, direct);
    const int code = static_cast<int>(e.breaker->code);
    const bool harness = code >= 300 && code < 400;
    if (const testkit::Support s = device.supports(c); !s.supported) {
      r.add_bytes(abi_op_of(c), 0);
      skip(r, s.reason);
    } else if (!e.breaker->apply(c, out)) {
      r.add_bytes(abi_op_of(c), 0);
      skip(r, "the base case offers this breaker nothing to break");
    } else if (harness || !testkit::abi_inexpressible(c).empty()) {
      // Rejected by the harness before any upload: the library is not called, no byte of it is compared.
      r.add_bytes(abi_op_of(c), 0);
      testkit::DeviceBackend guarded(library);
      const InsertOutputs before = out;
      const Status status = guarded.run(c, out);
      if (status.code != e.breaker->code)
        fail(r, "host harness rule: expected E" + std::to_string(code) + ", got " + status.ToString());
      if (guarded.last_checks().abi_called) fail(r, "a case the harness rejects reached the library");
      if (out.cache != before.cache || out.q_out != before.q_out) fail(r, "a rejected case wrote into its outputs");
    } else if (validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly).code != e.breaker->code) {
      r.add_bytes(abi_op_of(c), 0);
      skip(r,
           "value rule (invisible to a metadata-only wrapper): gpu_invalid_input_test checks that the device "
           "writes nothing outside the addressed records");
    } else if (const testkit::Support declared = device.declared().checks_breaker(base, c, e.breaker->code);
               !required_tensor_missing(c) && !declared.supported) {
      // The library declares it does not check this rule, or does not take the broken geometry.
      r.add_bytes(abi_op_of(c), 0);
      skip(r, declared.reason);
    } else {
      const InsertOutputs before = out;
      std::string thrown;
      try {
        (void)device.run(c, out);
      } catch (const testkit::KernelCallError& error) {
        thrown = error.what();
      }
      // The library was called: its whole backing and q_out are compared for "nothing written".
      r.add_bytes(abi_op_of(c),
                  device.last_checks().abi_called ? static_cast<std::int64_t>(out.cache.size() + out.q_out.size()) : 0);
      const int expected = required_tensor_missing(c) ? KVC_STATUS_BAD_ARGUMENT : code;
      if (device.last_checks().abi_status != expected)
        fail(r, "metadata rule: the ABI must return " + std::to_string(expected) + ", got " +
                    std::to_string(device.last_checks().abi_status) + ": " + device.last_checks().abi_message + thrown);
      if (!device.last_checks().clean()) record_damage(r, device.last_checks().to_string());
      if (out.cache != before.cache || out.q_out != before.q_out) fail(r, "a rejected call wrote into its outputs");
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

}  // namespace

std::string device_backend_unavailable() { return ""; }

std::string cuda_device_unavailable_reason() { return testkit::cuda_device_unavailable(); }

std::string device_description() {
  if (const std::string reason = testkit::cuda_device_unavailable(); !reason.empty()) return "none: " + reason;
  int device = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&p, device) != cudaSuccess)
    return "a CUDA device (its properties could not be read)";
  char memory[64];
  std::snprintf(memory, sizeof memory, " (sm_%d%d, %.1f GiB)", p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(p.name) + memory;
}

struct KernelSession::Impl {
  testkit::KernelLibrary library;
};

KernelSession::KernelSession(const std::string& path) {
  try {
    impl_ = std::make_unique<Impl>(
        Impl{path.empty() ? testkit::KernelLibrary::from_environment() : testkit::KernelLibrary::open(path)});
  } catch (const testkit::KernelLibraryError& e) {
    throw std::runtime_error(e.what());
  }
}

KernelSession::~KernelSession() = default;

std::string KernelSession::library() const { return impl_->library.describe(); }

std::vector<OpDeclaration> KernelSession::declarations() const { return library_declarations(impl_->library); }

void KernelSession::run_suite(const std::string& suite, const RunOptions& options, const RunSink& outer) {
  const testkit::KernelLibrary& library = impl_->library;
  const LibraryMentions mentions{"device:" + library.describe(), library.describe(), library.name()};
  RunSink sink = outer;
  sink.record = [&](CheckResult r) {
    r.message = library_named_once(std::move(r.message), mentions);
    outer.record(std::move(r));
  };
  testkit::DeviceBackend device(library);
  if (suite == kSuiteMatrix) return matrix_suite(options, device, sink);
  if (suite == kSuiteDspark) return dspark_suite(options, device, sink);
  if (suite == kSuiteGolden) return golden_suite(options, device, sink);
  if (suite == kSuiteInvalid) return invalid_suite(options, library, sink);
  if (suite == kSuiteKvNorm) return kv_norm_suite(options, device, sink);
  if (suite == kSuiteFusedKvNorm) return fused_kv_norm_suite(options, device, sink);
  if (suite == kSuiteStore) return store_suite(options, device, sink);
  if (suite == kSuiteStacked) return stacked_suite(options, library, sink);
  throw std::invalid_argument("no kernel suite '" + suite + "'");
}

}  // namespace kvc::runner
