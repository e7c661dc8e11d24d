// kernel_suites.cpp: kernel conformance through the device backend (see kernel_suites.h).
#include "kernel_suites.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/registry.h"
#include "kvc/golden/fixture.h"
#include "kvc/golden/fixture_check.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/kernel_library.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/compare/policy_report.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "kvc/validate.h"
#include "fixture_verdict.h"
#include "recording_backend.h"
#include "stopwatch.h"

namespace kvc::runner {
namespace {

CheckResult check(const char* suite, std::string op, std::string format, std::string name) {
  return make_check(kKernelSide, suite, std::move(op), std::move(format), std::move(name));
}

std::string format_key(RecordFormat f) { return std::string(layout_of(f).name); }

// Device memory damage is never a status: it fails the check and is classified as damage to a
// region no op may touch.
void record_damage(CheckResult& r, const std::string& what) {
  fail(r, "DEVICE MEMORY DAMAGED: " + what);
  testkit::ClassifiedSite site;
  site.cls = testkit::MismatchClass::kUntouchedRegion;
  site.where = "device guard zones or input buffers";
  site.detail = what.substr(0, what.find('\n'));
  site.bytes = 0;
  r.classes.add(site);
}

// One case against the oracle under the declared profile, through the profile checker; the
// bytes of a failure are classified.
void check_insert(testkit::DeviceBackend& device, const std::optional<kvc::Profile>& profile, const InsertCase& c,
                  bool repeat, CheckResult& r) {
  RecordingBackend recorder(device, profile);
  try {
    const testkit::BackendCheck result = testkit::check_backend_insert(recorder, c);
    if (!result.passed) {
      fail(r, result.text);
      if (result.oracle_status.ok() && result.backend_status.ok()) {
        const kvc::Profile declared = recorder.declared_profile(c);
        const InsertOutputs initial = testkit::make_outputs(c);
        InsertOutputs expected = initial;
        oracle::OracleOptions o;
        o.profile = declared;
        (void)testkit::OracleBackend(o).run(c, expected);
        r.classes = testkit::classify_insert_mismatches(c, declared, initial.cache, expected.cache,
                                                        recorder.last().cache, &result.report);
        if (expected.q_out != recorder.last().q_out && declared.rsqrt == RsqrtMode::kCorrectlyRounded)
          r.message += "  (q_out differences are not classified: the classes cover the cache)\n";
      }
      return;
    }
    if (!repeat || !result.backend_status.ok()) return;
    const InsertOutputs first = recorder.last();
    InsertOutputs second = testkit::make_outputs(c);
    (void)device.run(c, second);
    if (first.cache != second.cache || first.q_out != second.q_out) {
      std::string text = "a second run wrote different bytes (the result depends on timing or the grid)\n";
      if (first.cache != second.cache) {
        testkit::ReportContext ctx;
        ctx.expected_name = "first run";
        ctx.actual_name = "second run";
        text += testkit::format_case_report(c, testkit::diff_case_backings(c, first.cache, second.cache), first.cache,
                                            second.cache, ctx);
      } else {
        text += "  q_out differs between the runs\n";
      }
      fail(r, text);
    }
  } catch (const testkit::BufferDamageError& e) {
    record_damage(r, e.what());
  } catch (const testkit::KernelCallError& e) {
    fail(r, std::string("kernel call failed: ") + e.what());
  }
}

void matrix_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<std::pair<InsertOp, cases::ConformanceSpec>> cells;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    if (!options.selects(op)) continue;
    for (const cases::ConformanceSpec& spec : cases::kernel_matrix(op))
      if (options.selects(spec.format) && options.within_tokens(spec.tokens)) cells.push_back({op, spec});
  }
  sink.begin_suite("kernel matrix: every op, format, token count, block size and page kind against the oracle",
                   cells.size());
  for (const auto& [op, spec] : cells) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteMatrix, op_key(op), format_key(spec.format), spec.name());
    const InsertCase c = cases::build_case(op, spec, 0);
    if (const testkit::Support s = device.supports(c); !s.supported) {
      r.verdict = Verdict::kSkipped;
      r.message = s.reason;
    } else {
      check_insert(device, options.profile, c, true, r);
    }
    r.seconds = clock.seconds();
    sink.record(r);
  }
}

void dspark_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<cases::ConformanceSpec> specs;
  if (options.selects(InsertOp::kKvOnly) && options.selects(InsertOp::kLegacy))
    for (const cases::ConformanceSpec& spec : cases::conformance_matrix())
      if (options.selects(spec.format) && options.within_tokens(spec.tokens)) specs.push_back(spec);
  sink.begin_suite("kernel dspark: legacy (dummy query) and KV-only against the oracle, three rounds", specs.size());
  for (const cases::ConformanceSpec& spec : specs) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteDspark, kBothOps, format_key(spec.format), "UpstreamDspark_" + spec.name());
    for (int round = 0; round < cases::kUpstreamRounds && r.verdict != Verdict::kFailed; ++round) {
      for (const InsertCase& c : {cases::build_kv_only(spec, round), cases::build_legacy(spec, round)}) {
        if (const testkit::Support s = device.supports(c); !s.supported) {
          r.verdict = Verdict::kSkipped;
          r.message = s.reason;
          break;
        }
        CheckResult one = r;
        one.message.clear();
        check_insert(device, options.profile, c, false, one);
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
        if (options.selects(f.c.op) && resolved && options.selects(resolved->format) &&
            options.within_tokens(f.c.num_inserted()))
          fixtures.push_back(std::move(f));
      } catch (const golden::CorruptFixtureError& e) {
        CheckResult r = check(kSuiteGolden, "-", "-", std::filesystem::path(path).stem().string());
        fail(r, std::string("corrupt fixture: ") + e.what());
        problems.push_back(r);
      }
    }
  } catch (const std::exception& e) {
    CheckResult r = check(kSuiteGolden, "-", "-", "fixtures");
    fail(r, std::string("cannot list the fixtures: ") + e.what());
    problems.push_back(r);
  }
  sink.begin_suite("kernel golden: the frozen fixtures through the library", fixtures.size() + problems.size());
  for (CheckResult& r : problems) sink.record(r);
  for (const golden::Fixture& f : fixtures) {
    const Stopwatch clock;
    CheckResult r = check(kSuiteGolden, op_key(f.c.op), f.record_format, f.name);
    RecordingBackend recorder(device, options.profile);
    try {
      judge_fixture(f, recorder, r);
    } catch (const testkit::BufferDamageError& e) {
      record_damage(r, e.what());
    } catch (const testkit::KernelCallError& e) {
      fail(r, std::string("kernel call failed: ") + e.what());
    }
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
    CheckResult r = check(kSuiteInvalid, op_key(e.op), format_key(e.format), testkit::rule_matrix_name(e));
    InsertCase c = testkit::small_valid_case(e.op, e.format);
    InsertOutputs out = testkit::make_outputs(c);
    testkit::DeviceBackendOptions direct;
    direct.host_validation = false;
    direct.throw_on_damage = false;
    testkit::DeviceBackend device(library, direct);
    const int code = static_cast<int>(e.breaker->code);
    const bool harness = code >= 300 && code < 400;
    if (const testkit::Support s = device.supports(c); !s.supported) {
      r.verdict = Verdict::kSkipped;
      r.message = s.reason;
    } else if (!e.breaker->apply(c, out)) {
      r.verdict = Verdict::kSkipped;
      r.message = "the base case offers this breaker nothing to break";
    } else if (harness || !testkit::abi_inexpressible(c).empty()) {
      // Rejected by the harness before any upload.
      testkit::DeviceBackend guarded(library);
      const InsertOutputs before = out;
      const Status status = guarded.run(c, out);
      if (status.code != e.breaker->code)
        fail(r, "host harness rule: expected E" + std::to_string(code) + ", got " + status.ToString());
      if (guarded.last_checks().abi_called) fail(r, "a case the harness rejects reached the library");
      if (out.cache != before.cache || out.q_out != before.q_out) fail(r, "a rejected case wrote into its outputs");
    } else if (validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly).code != e.breaker->code) {
      r.verdict = Verdict::kSkipped;
      r.message =
          "value rule (invisible to a metadata-only wrapper): gpu_invalid_input_test checks that the device "
          "writes nothing outside the addressed records";
    } else {
      const InsertOutputs before = out;
      std::string thrown;
      try {
        (void)device.run(c, out);
      } catch (const testkit::KernelCallError& error) {
        thrown = error.what();
      }
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

void KernelSession::run(const RunOptions& options, const RunSink& sink) {
  testkit::DeviceBackend device(impl_->library);
  if (options.selects_suite(kSuiteMatrix)) matrix_suite(options, device, sink);
  if (options.selects_suite(kSuiteDspark)) dspark_suite(options, device, sink);
  if (options.selects_suite(kSuiteGolden)) golden_suite(options, device, sink);
  if (options.selects_suite(kSuiteInvalid)) invalid_suite(options, impl_->library, sink);
}

}  // namespace kvc::runner
