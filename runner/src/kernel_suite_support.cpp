// kernel_suite_support.cpp: see kernel_suite_support.h.
#include "kernel_suite_support.h"

#include "abi_op.h"
#include "recording_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/compare/policy_report.h"

namespace kvc::runner {
namespace {

// The bytes of what the library wrote that check_backend_insert compared: the whole backing
// and q_out when both accepted the case (under the profile checker, or row by row), and when
// both rejected it ("nothing written"); none when the statuses differ or the library was not
// called.
std::int64_t compared_bytes(const testkit::BackendCheck& result, const testkit::DeviceBackend& device,
                            const InsertOutputs& written) {
  if (!device.last_checks().abi_called || result.oracle_status.code != result.backend_status.code) return 0;
  const std::int64_t q_out = static_cast<std::int64_t>(written.q_out.size());
  if (result.oracle_status.ok()) return result.report.compared_bytes + q_out;
  return static_cast<std::int64_t>(written.cache.size()) + q_out;
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

void check_insert(testkit::DeviceBackend& device, const std::optional<kvc::Profile>& profile, const InsertCase& c,
                  bool repeat, CheckResult& r) {
  const AbiOp op = abi_op_of(c);
  r.add_bytes(op, 0);
  RecordingBackend recorder(device, profile);
  judge_library_call(r, [&] {
    const testkit::BackendCheck result = testkit::check_backend_insert(recorder, c);
    r.add_bytes(op, compared_bytes(result, device, recorder.last()));
    r.rsqrt.add(result.rsqrt);
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
  });
}

}  // namespace kvc::runner
