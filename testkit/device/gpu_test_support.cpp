// gpu_test_support.cpp: see gpu_test_support.h.
#include "testkit/device/gpu_test_support.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/legacy_insert.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/small_cases.h"

namespace kvc::gpu {
namespace {

// compute-sanitizer's leak check reports what is still allocated when the CUDA context is
// destroyed. KVC_DEVICE_RESET_AT_EXIT=1 (set by the memcheck entries) destroys it after the last
// test, so that the report covers every allocation the suite and the library made.
class DeviceResetAtExit : public ::testing::Environment {
 public:
  void TearDown() override { cudaDeviceReset(); }
};

const bool kDeviceResetAtExitRegistered = [] {
  const char* v = std::getenv("KVC_DEVICE_RESET_AT_EXIT");
  if (v != nullptr && std::string(v) == "1") ::testing::AddGlobalTestEnvironment(new DeviceResetAtExit);
  return true;
}();

}  // namespace

const testkit::KernelLibrary& kernel_library() {
  static const testkit::KernelLibrary library = [] {
    testkit::KernelLibrary l = testkit::KernelLibrary::from_environment();
    std::printf("kernel library under test: %s\n", l.describe().c_str());
    return l;
  }();
  return library;
}

testkit::DeviceBackend make_backend(testkit::DeviceBackendOptions options) {
  return make_backend(kernel_library(), options);
}

testkit::DeviceBackend make_backend(const testkit::KernelLibrary& library, testkit::DeviceBackendOptions options) {
  options.throw_on_damage = false;
  return testkit::DeviceBackend(library, options);
}

::testing::AssertionResult clean(const testkit::DeviceBackend& backend) {
  if (backend.last_checks().clean()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << backend.name() << " damaged device memory (guard zones or inputs):\n"
                                       << backend.last_checks().to_string();
}

RsqrtMode declared_mode(const testkit::DeviceBackend& backend, const InsertCase& c) {
  const testkit::RsqrtModes modes = backend.rsqrt_modes(c);
  return c.op == InsertOp::kLegacy ? modes.q_norm : modes.kv_norm;
}

std::string first_q_out_difference(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                                   const std::vector<std::uint8_t>& actual) {
  const std::size_t n = std::min(expected.size(), actual.size());
  std::size_t i = 0;
  while (i < n && expected[i] == actual[i]) ++i;
  if (i == n) return expected.size() == actual.size() ? "" : "q_out sizes differ";
  // Element index inside q_out, then (token, head, dim) in its layout (docs/contract.md §4).
  const std::int64_t es = dtype_size(c.q_out.dtype);
  const std::int64_t element = (static_cast<std::int64_t>(i) - c.q_out.offset_bytes) / es;
  const std::int64_t heads = c.q_out.rank() == 3 ? c.q_out.size(1) : 0;
  std::string where = "q_out byte " + std::to_string(i);
  if (heads > 0 && element >= 0) {
    const std::int64_t per_token = heads * kHeadDim;
    const std::int64_t t = element / per_token, rem = element % per_token;
    std::int64_t h = rem / kHeadDim, d = rem % kHeadDim;
    if (c.q_interleaved && is_packed(*format_of(c))) {
      const std::int64_t lane = rem / (heads * kDimsPerLane);
      h = rem % (heads * kDimsPerLane) / kDimsPerLane;
      d = lane * kDimsPerLane + rem % kDimsPerLane;
    }
    where += ": token " + std::to_string(t) + " head " + std::to_string(h) + " dim " + std::to_string(d);
  }
  char bytes[64];
  std::snprintf(bytes, sizeof bytes, " (expected 0x%02x, actual 0x%02x)", expected[i], actual[i]);
  return where + bytes;
}

::testing::AssertionResult matches_oracle(const InsertCase& c, const InsertOutputs& expected,
                                          const InsertOutputs& actual, RsqrtMode mode, const std::string& description) {
  if (mode == RsqrtMode::kCorrectlyRounded && expected.cache == actual.cache && expected.q_out == actual.q_out)
    return ::testing::AssertionSuccess();
  const testkit::ApproxRsqrtResult r = testkit::compare_under_rsqrt_mode(c, mode, expected, actual);
  if (r.accepted) {
    std::printf("%s: accepted under rsqrt mode %s\n%s", description.c_str(),
                std::string(testkit::rsqrt_mode_name(mode)).c_str(), r.report.c_str());
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << description << ": the kernel's bytes differ from the oracle's (rsqrt mode "
          << testkit::rsqrt_mode_name(mode) << ")\n"
          << r.report;
  if (const std::string q = first_q_out_difference(c, expected.q_out, actual.q_out); !q.empty())
    failure << "first " << q << "\n";
  return failure;
}

::testing::AssertionResult identical_runs(const InsertCase& c, const InsertOutputs& first, const InsertOutputs& second,
                                          const std::string& first_name, const std::string& second_name) {
  if (first.cache == second.cache && first.q_out == second.q_out) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << first_name << " and " << second_name << " wrote different bytes\n";
  if (first.cache != second.cache) {
    testkit::ReportContext ctx;
    ctx.expected_name = first_name;
    ctx.actual_name = second_name;
    failure << testkit::format_case_report(c, testkit::diff_case_backings(c, first.cache, second.cache), first.cache,
                                           second.cache, ctx);
  }
  if (const std::string q = first_q_out_difference(c, first.q_out, second.q_out); !q.empty())
    failure << "first " << q << "\n";
  return failure;
}

InsertOutputs oracle_outputs(const InsertCase& c) {
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = testkit::OracleBackend().run(c, out);
  EXPECT_TRUE(s.ok()) << "the oracle rejected the case: " << s.ToString();
  return out;
}

void expect_rejects_misaligned_cache(const testkit::KernelLibrary& library, InsertOp op) {
  testkit::DeviceBackendOptions direct;
  direct.host_validation = false;  // the library's own validation must answer
  testkit::DeviceBackend backend = make_backend(library, direct);
  InsertCase c = testkit::small_valid_case(op, RecordFormat::kPacked528);
  c.cache.offset_bytes += 8;  // a misaligned cache base reaches the library as byte_offset
  InsertOutputs out = testkit::make_outputs(c);
  const InsertOutputs before = out;
  EXPECT_EQ(backend.run(c, out).code, ErrorCode::kMisaligned);
  EXPECT_TRUE(clean(backend));
  EXPECT_EQ(out.cache, before.cache);
  EXPECT_EQ(out.q_out, before.q_out);
}

HostTensor expect_kv_norm_equals_oracle(testkit::DeviceBackend& backend, testkit::Rng& rng, std::int64_t rows) {
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, rows), {rows, kHeadDim});
  const HostTensor w = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 1), {kHeadDim});
  std::vector<std::uint16_t> expected, actual;
  EXPECT_TRUE(oracle::kv_norm(kv, w, 1e-6f, &expected).ok());
  EXPECT_TRUE(backend.kv_norm(kv, w, 1e-6f, &actual).ok()) << backend.last_checks().abi_message;
  EXPECT_TRUE(clean(backend));
  EXPECT_EQ(expected, actual);
  return w;
}

void KvNormRowsTest::SetUp() {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackendOptions options;
  options.throw_on_damage = false;  // as make_backend()
  backend_.emplace(kernel_library(), options);
  if (const testkit::Support s = backend_->supports_kv_norm(); !s.supported) GTEST_SKIP() << s.reason;
}

std::string kv_norm_rows_name(const std::tuple<std::int64_t, bool>& rows_in_place) {
  return "Rows" + std::to_string(std::get<0>(rows_in_place)) +
         (std::get<1>(rows_in_place) ? "_InPlace" : "_OutOfPlace");
}

void expect_conformant(const InsertCase& c, const std::string& name, testkit::DeviceBackendOptions options) {
  testkit::DeviceBackend device = make_backend(options);
  KVC_REQUIRE_SUPPORT(device, c);
  const InsertOutputs expected = oracle_outputs(c);
  InsertOutputs first = testkit::make_outputs(c);
  const Status s = device.run(c, first);
  ASSERT_TRUE(s.ok()) << "a valid case was rejected: " << s.ToString();
  ASSERT_TRUE(clean(device));
  EXPECT_TRUE(matches_oracle(c, expected, first, declared_mode(device, c), name));
  InsertOutputs second = testkit::make_outputs(c);
  ASSERT_TRUE(device.run(c, second).ok());
  EXPECT_TRUE(clean(device));
  EXPECT_TRUE(identical_runs(c, first, second, "first run", "second run"));
}

}  // namespace kvc::gpu
