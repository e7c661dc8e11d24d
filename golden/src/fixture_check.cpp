// fixture_check.cpp: a backend against a fixture's frozen bytes (see fixture_check.h).
#include "kvc/golden/fixture_check.h"

#include <cstdio>
#include <cstring>
#include <optional>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/q_out_codec.h"
#include "kvc/profile.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"

namespace kvc::golden {
namespace {

// Whether the case has RMSNorm rows (whose bytes depend on the rsqrt a backend uses): Q heads
// (packed: Hp > 0; full caches: H > 0) or the fused kv_norm.
bool has_norm_rows(const InsertCase& c) {
  if (c.op == InsertOp::kKvOnly) return c.kv_norm_weight.present;
  return c.apply_q_norm && resolve_or_throw(c).q_out.heads > 0;
}

std::string test_name_of(const std::string& fixture) {
  std::string s = fixture;
  for (char& ch : s)
    if (ch == '.') ch = '_';
  return s;
}

// "token 1 head 2 dim 48" for a q_out byte, in q_out's layout (docs/contract.md §4.2), or
// "element N" for a byte no element of the layout holds.
std::string q_out_position(const QOutLayout& q, std::int64_t byte, std::int64_t element) {
  const std::optional<oracle::QOutElement> e = oracle::locate_q_out_byte(q, byte);
  if (!e) return "element " + std::to_string(element);
  return "token " + std::to_string(e->token) + " head " + std::to_string(e->head) + " dim " + std::to_string(e->dim);
}

// The q_out element at `element` of a buffer, decoded: "bf16 0x3f80 = 1".
std::string q_out_value(const InsertCase& c, const std::vector<std::uint8_t>& buffer, std::int64_t element) {
  const int es = dtype_size(c.q_out.dtype);
  const std::size_t at = static_cast<std::size_t>(c.q_out.offset_bytes + element * es);
  if (at + static_cast<std::size_t>(es) > buffer.size()) return "(outside the buffer)";
  char s[96];
  if (es == 1) {
    std::snprintf(s, sizeof s, "e4m3 0x%02x = %.9g", buffer[at], static_cast<double>(oracle::e4m3_decode(buffer[at])));
  } else {
    std::uint16_t v;
    std::memcpy(&v, buffer.data() + at, sizeof v);
    const bool f16 = c.q_out.dtype == DType::kF16;
    std::snprintf(s, sizeof s, "%s 0x%04x = %.9g", f16 ? "f16" : "bf16", v,
                  static_cast<double>(f16 ? oracle::fp16_to_float(v) : oracle::bf16_to_float(v)));
  }
  return s;
}

std::string q_out_report(const Fixture& f, const std::vector<std::uint8_t>& actual, const std::string& actual_name) {
  const std::vector<std::uint8_t>& expected = f.expected_q_out;
  std::string s = actual_name + " vs fixture " + f.name + ": q_out";
  if (expected.size() != actual.size())
    return s + " sizes differ: " + std::to_string(actual.size()) + " vs " + std::to_string(expected.size()) +
           " bytes\n";
  const QOutLayout layout = resolve_or_throw(f.c).q_out;
  const int es = dtype_size(f.c.q_out.dtype);
  std::int64_t mismatches = 0;
  std::string shown;
  std::int64_t last_element = -1;
  int listed = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    ++mismatches;
    const std::int64_t element = (static_cast<std::int64_t>(i) - f.c.q_out.offset_bytes) / es;
    if (element == last_element || listed >= 5) continue;
    last_element = element;
    ++listed;
    char bytes[64];
    std::snprintf(bytes, sizeof bytes, "expected 0x%02x actual 0x%02x", expected[i], actual[i]);
    shown += "  q_out byte " + std::to_string(i) + " " + q_out_position(layout, static_cast<std::int64_t>(i), element) +
             ": " + bytes + "\n      expected " + q_out_value(f.c, expected, element) + "\n      actual   " +
             q_out_value(f.c, actual, element) + "\n";
  }
  return s + ": " + std::to_string(mismatches) + " mismatching bytes of " + std::to_string(expected.size()) + "\n" +
         shown;
}

}  // namespace

std::string compare_with_fixture(const Fixture& f, const InsertOutputs& actual, const std::string& actual_name) {
  std::vector<std::uint8_t> expected_backing = f.expected_cache;
  expected_backing.resize(expected_backing.size() + static_cast<std::size_t>(testkit::kGuardBytes), f.canary);
  std::string report;
  if (actual.cache != expected_backing) {
    testkit::ReportContext ctx;
    ctx.expected_name = "fixture " + f.name;
    ctx.actual_name = actual_name;
    ctx.case_description = f.description + "; " + f.provenance();
    ctx.reproduce = "ctest --test-dir build/default -R '" + test_name_of(f.name) + "$' --output-on-failure";
    if (f.c.fp8_scale.present) ctx.fp8_scale = f.c.fp8_scale.load<float>(0);
    report += testkit::format_case_report(f.c, testkit::diff_case_backings(f.c, expected_backing, actual.cache),
                                          expected_backing, actual.cache, ctx);
  }
  if (actual.q_out != f.expected_q_out) report += q_out_report(f, actual.q_out, actual_name);
  return report;
}

FixtureCheck check_fixture(const Fixture& f, testkit::Backend& backend) {
  if (const testkit::Support s = backend.supports(f.c); !s.supported)
    return {Verdict::kSkipped, backend.name() + " does not support this case: " + s.reason};
  kvc::Profile declared = backend.declared_profile(f.c);
  if (declared.rsqrt != RsqrtMode::kCorrectlyRounded && has_norm_rows(f.c))
    return {Verdict::kSkipped, backend.name() +
                                   " declares the approximate rsqrt for this case's norm rows; golden fixtures are "
                                   "byte-exact under the correctly rounded rsqrt (the oracle comparison judges it)"};
  declared.rsqrt = RsqrtMode::kCorrectlyRounded;
  if (declared != kvc::vllm_profile())
    return {Verdict::kSkipped, backend.name() + " declares profile " + kvc::profile_name(declared) +
                                   "; golden fixtures hold the contract's default profile vllm"};
  InsertOutputs out = testkit::make_outputs(f.c, f.canary);
  const Status status = backend.run(f.c, out);
  if (!status.ok())
    return {Verdict::kDiffers, backend.name() + " rejected fixture " + f.name + ": " + status.ToString()};
  std::string report = compare_with_fixture(f, out, backend.name());
  if (report.empty()) return {Verdict::kReproduced, ""};
  return {Verdict::kDiffers, report};
}

}  // namespace kvc::golden
