// gpu_test_support.h: what every GPU test shares.
//
// - KVC_REQUIRE_CUDA_DEVICE(): the first statement of every GPU test. Without a usable CUDA
//   device the test is skipped with the reason (CI compiles the GPU suite but has no GPU; ctest
//   reports these tests as skipped, never as passed).
// - kernel_library(): the library under test, loaded once per program: KVC_KERNELS=path.so when
//   set, else our kernels. A library that fails to load fails the test (it is not a skip).
// - KVC_REQUIRE_SUPPORT(backend, case): skips a case the library declares it does not implement.
// - matches_oracle(): the comparison of a backend's outputs with the oracle's, byte for byte, or
//   under the approximate-rsqrt acceptance when the library declares that mode for the case.
// - expect_conformant(): one valid case run twice on the device, against the oracle.
// - expect_rejects_misaligned_cache(): a library's own validation answering a broken rule.
// - expect_kv_norm_equals_oracle(): a library's standalone kv_norm on random rows.
// - KvNormRowsTest: the fixture of the standalone kv_norm suites over (rows, in place).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "kvc/insert_case.h"
#include "testkit/cases/case_builder.h"
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

// The rsqrt mode the library declares for this case's norm rows (legacy: its Q-norm, KV-only: its
// fused kv_norm).
RsqrtMode declared_mode(const testkit::DeviceBackend& backend, const InsertCase& c);

// Cache backing and q output equal the oracle's (`expected`) byte for byte, or, when `mode` is
// the approximation, row by row within the contract's window on r. The failure message decodes
// the first differing bytes (page, slot, field; q token, head, dim).
::testing::AssertionResult matches_oracle(const InsertCase& c, const InsertOutputs& expected,
                                          const InsertOutputs& actual, RsqrtMode mode, const std::string& description);

// Two device runs of one case must write identical bytes (no dependence on timing or grid).
::testing::AssertionResult identical_runs(const InsertCase& c, const InsertOutputs& first, const InsertOutputs& second,
                                          const std::string& first_name, const std::string& second_name);

// "q_out byte 1234: token 0 head 2 dim 105 (expected 0x12, actual 0x34)" for the first
// difference, or "" when equal.
std::string first_q_out_difference(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                                   const std::vector<std::uint8_t>& actual);

// Oracle outputs of a case (asserting it is accepted).
InsertOutputs oracle_outputs(const InsertCase& c);

// Runs `c` on the device and checks it against the oracle (matches_oracle under the declared
// mode, guard zones and inputs clean), then checks that a second run writes identical bytes.
// Skips a case the library does not implement.
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
