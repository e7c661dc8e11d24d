// gpu_test_support.cpp: see gpu_test_support.h.
#include "testkit/device/gpu_test_support.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "kvc/oracle/kv_norm.h"
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

testkit::Verdict judge(const testkit::Backend& backend, const InsertCase& c, const Status& status, InsertOutputs actual,
                       const std::optional<InsertOutputs>& initial, testkit::JudgeOptions options) {
  options.library_name = backend.name();
  const kvc::Profile declared = backend.declared_profile(c);
  if (initial) return testkit::judge_insert(c, declared, status, *initial, std::move(actual), options);
  return testkit::judge_insert(c, declared, status, std::move(actual), options);
}

testkit::Verdict judge(const testkit::Backend& backend, const StoreCase& c, const Status& status,
                       std::vector<std::uint8_t> actual) {
  testkit::JudgeOptions options;
  options.library_name = backend.name();
  return testkit::judge_store(c, backend.declared_store_profile(c), status, std::move(actual), options);
}

::testing::AssertionResult passes(const testkit::Verdict& v, const std::string& description) {
  if (v.passed()) {
    if (v.rsqrt.mode == RsqrtMode::kApproximate)
      std::printf("%s: accepted under the declared approximate rsqrt\n%s", description.c_str(), v.rsqrt.report.c_str());
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << description << ": " << testkit::verdict_kind_name(v.kind) << " (declared profile `"
          << kvc::profile_name(v.profile) << "`)\n"
          << v.report;
  if (!v.classes.empty()) failure << "mismatch classes: " << v.classes.summary_line() << "\n" << v.classes.report();
  return failure;
}

::testing::AssertionResult identical_runs(const InsertCase& c, const InsertOutputs& first, const InsertOutputs& second,
                                          const std::string& first_name, const std::string& second_name) {
  testkit::ReportContext ctx;
  ctx.expected_name = first_name;
  ctx.actual_name = second_name;
  const std::string d = testkit::outputs_difference_report(c, first, second, ctx);
  if (d.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << first_name << " and " << second_name << " wrote different bytes\n" << d;
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
  InsertOutputs first = testkit::make_outputs(c);
  const Status s = device.run(c, first);
  ASSERT_TRUE(clean(device));
  const testkit::Verdict v = judge(device, c, s, std::move(first));
  EXPECT_TRUE(passes(v, name));
  if (!v.passed()) return;
  InsertOutputs second = testkit::make_outputs(c);
  ASSERT_TRUE(device.run(c, second).ok());
  EXPECT_TRUE(clean(device));
  EXPECT_TRUE(identical_runs(c, v.actual, second, "first run", "second run"));
}

}  // namespace kvc::gpu
