// kernel_suite_support.cpp: see kernel_suite_support.h.
#include "kernel_suite_support.h"

#include <utility>

#include "testkit/backends/backing.h"
#include "testkit/cases/store_cases.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/judge.h"
#include "testkit/compare/mismatch_classes.h"

namespace kvc::runner {
namespace {

constexpr const char* kSecondRunDiffers =
    "a second run wrote different bytes (the result depends on timing or the grid)\n";

testkit::JudgeOptions named(const testkit::DeviceBackend& device) {
  testkit::JudgeOptions o;
  o.library_name = device.name();
  return o;
}

}  // namespace

CheckResult kernel_check(const char* suite, std::string op, std::string format, std::string name) {
  return make_check(kKernelSide, suite, std::move(op), std::move(format), std::move(name));
}

std::string format_key(RecordFormat f) { return std::string(layout_of(f).name); }

void record_damage(CheckResult& r, const std::string& what) {
  fail(r, "DEVICE MEMORY DAMAGED: " + what);
  testkit::ClassifiedSite site;
  site.cls = testkit::MismatchClass::kUntouchedRegion;
  site.where = "device guard zones or input buffers";
  site.detail = what.substr(0, what.find('\n'));
  site.bytes = 0;
  r.classes.add(site);
}

void record_verdict(CheckResult& r, AbiOp op, const testkit::Verdict& v, bool library_called) {
  r.add_bytes(op, library_called ? v.compared_bytes : 0);
  r.rsqrt.add(v.rsqrt);
  if (v.passed()) return;
  fail(r, v.report);
  r.classes = v.classes;
  if (v.kind == testkit::VerdictKind::kMismatch && v.expected.q_out != v.actual.q_out &&
      v.profile.rsqrt == RsqrtMode::kCorrectlyRounded)
    r.message += "  (q_out differences are not classified: the classes cover the cache)\n";
}

void check_insert(testkit::DeviceBackend& device, const std::optional<kvc::Profile>& profile, const InsertCase& c,
                  bool repeat, CheckResult& r) {
  const AbiOp op = abi_op_of(c);
  r.add_bytes(op, 0);
  judge_library_call(r, [&] {
    InsertOutputs out = testkit::make_outputs(c);
    const Status s = device.run(c, out);
    const testkit::Verdict v =
        testkit::judge_insert(c, profile.value_or(device.declared_profile(c)), s, std::move(out), named(device));
    record_verdict(r, op, v, device.last_checks().abi_called);
    if (!v.passed() || !repeat || !v.library_status.ok()) return;
    InsertOutputs second = testkit::make_outputs(c);
    (void)device.run(c, second);
    testkit::ReportContext ctx;
    ctx.expected_name = "first run";
    ctx.actual_name = "second run";
    if (const std::string d = testkit::outputs_difference_report(c, v.actual, second, ctx); !d.empty())
      fail(r, kSecondRunDiffers + d);
  });
}

void check_store(testkit::DeviceBackend& device, const std::optional<kvc::Profile>& profile, const StoreCase& c,
                 bool repeat, CheckResult& r) {
  r.add_bytes(AbiOp::kStoreRotated, 0);
  judge_library_call(r, [&] {
    std::vector<std::uint8_t> backing = testkit::make_store_backing(c);
    const Status s = device.run_store(c, backing);
    const testkit::Verdict v = testkit::judge_store(c, profile.value_or(device.declared_store_profile(c)), s,
                                                    std::move(backing), named(device));
    record_verdict(r, AbiOp::kStoreRotated, v, device.last_checks().abi_called);
    if (!v.passed() || !repeat || !v.library_status.ok()) return;
    std::vector<std::uint8_t> second = testkit::make_store_backing(c);
    (void)device.run_store(c, second);
    if (second != v.actual.cache) fail(r, kSecondRunDiffers);
  });
}

}  // namespace kvc::runner
