// gpu_test_support.h: what every GPU test shares.
//
// - KVC_REQUIRE_CUDA_DEVICE(): the first statement of every GPU test. Without a usable CUDA
//   device the test is skipped with the reason (CI compiles the GPU suite but has no GPU; ctest
//   reports these tests as skipped, never as passed).
// - kernel_library(): the library under test, loaded once per program: KVC_KERNELS=path.so when
//   set, else our kernels. A library that fails to load fails the test (it is not a skip).
// - KVC_REQUIRE_SUPPORT(backend, case): skips a case the library declares it does not implement.
// - judge(), passes(): the judge's verdict (testkit/compare/judge.h) on a library's outputs,
//   under the profile and rsqrt mode it declares for the case, as an assertion. The runner and
//   the fuzz properties judge through the same function.
// - expect_conformant(): one valid case run twice on the device, judged.
// - expect_rejects_misaligned_cache(): a library's own validation answering a broken rule.
// - expect_kv_norm_equals_oracle(): a library's standalone kv_norm on random rows.
// - KvNormRowsTest: the fixture of the standalone kv_norm suites over (rows, in place).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/status.h"
#include "kvc/store_case.h"
#include "testkit/cases/case_builder.h"
#include "testkit/compare/judge.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/kernel_library.h"

#define KVC_REQUIRE_CUDA_DEVICE()                                                       \
  do {                                                                                  \
    const std::string kvc_no_device_reason = ::kvc::testkit::cuda_device_unavailable(); \
    if (!kvc_no_device_reason.empty()) GTEST_SKIP() << kvc_no_device_reason;            \
  } while (0)

#define KVC_REQUIRE_SUPPORT(backend, c)                                \
  do {                                                                 \
    const ::kvc::testkit::Support kvc_support = (backend).supports(c); \
    if (!kvc_support.supported) GTEST_SKIP() << kvc_support.reason;    \
  } while (0)

namespace kvc::gpu {

// Loaded on first use; prints which library runs.
const testkit::KernelLibrary& kernel_library();

// A backend over kernel_library() for one test. Damage is recorded, not thrown, so that a test
// can assert on it and print every damaged buffer (expect_clean).
testkit::DeviceBackend make_backend(testkit::DeviceBackendOptions options = {});
// The same over another library (a shim under test).
testkit::DeviceBackend make_backend(const testkit::KernelLibrary& library, testkit::DeviceBackendOptions options = {});

// Guard zones intact and inputs unchanged in the backend's last call.
::testing::AssertionResult clean(const testkit::DeviceBackend& backend);

// The judge's verdict (testkit/compare/judge.h) on one call of `backend`'s library: `status` and
// `actual`, its outputs of `c` written over `initial` (default: the canary), against the oracle
// run once under the profile the library declares for the case (rsqrt included). `options` may
// set the oracle's validation level and whether q_out is judged; the library's name is the
// backend's.
testkit::Verdict judge(const testkit::Backend& backend, const InsertCase& c, const Status& status, InsertOutputs actual,
                       const std::optional<InsertOutputs>& initial = std::nullopt, testkit::JudgeOptions options = {});
// The same for a store call (`actual`: the backing).
testkit::Verdict judge(const testkit::Backend& backend, const StoreCase& c, const Status& status,
                       std::vector<std::uint8_t> actual);

// A verdict as an assertion: success when it passed (what a declared approximate rsqrt granted is
// printed), else `description`, the judge's report (page, slot, field, expected vs actual bytes
// and values, the policies the bytes follow) and the mismatch classes.
::testing::AssertionResult passes(const testkit::Verdict& v, const std::string& description);

// Two device runs of one case must write identical bytes (no dependence on timing or grid).
::testing::AssertionResult identical_runs(const InsertCase& c, const InsertOutputs& first, const InsertOutputs& second,
                                          const std::string& first_name, const std::string& second_name);

// Runs `c` on the device and judges it (judge(), passes(); guard zones and inputs clean), then
// checks that a second run writes identical bytes. Skips a case the library does not implement.
void expect_conformant(const InsertCase& c, const std::string& name, testkit::DeviceBackendOptions options = {});

// With host validation off, `library` itself must answer a small packed528 case of `op` whose
// cache base is misaligned (it reaches the library as byte_offset): kMisaligned, nothing written,
// no damage.
void expect_rejects_misaligned_cache(const testkit::KernelLibrary& library, InsertOp op);

// `rows` random bf16 rows and a random bf16 weight, drawn from `rng`, through `backend`'s
// standalone kv_norm (eps 1e-6): the oracle's bytes, no damage. Returns the weight, for a fused
// check with the same one.
HostTensor expect_kv_norm_equals_oracle(testkit::DeviceBackend& backend, testkit::Rng& rng, std::int64_t rows);

// A standalone kv_norm test over (rows, in place): skipped without a device or without the
// library's kv_norm; backend() is the backend whose support was asked.
class KvNormRowsTest : public ::testing::TestWithParam<std::tuple<std::int64_t, bool>> {
 protected:
  void SetUp() override;
  testkit::DeviceBackend& backend() { return *backend_; }

 private:
  std::optional<testkit::DeviceBackend> backend_;
};

// "Rows1024_InPlace": the test name of a KvNormRowsTest parameter.
std::string kv_norm_rows_name(const std::tuple<std::int64_t, bool>& rows_in_place);

}  // namespace kvc::gpu
