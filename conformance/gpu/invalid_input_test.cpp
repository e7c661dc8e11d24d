// invalid_input_test.cpp (GPU): every validation rule, broken alone (testkit rule breakers), for
// every op and format it applies to, through the kernel library.
//
// Who can see a rule decides how it is tested (docs/contract.md §5, validate.h ValueAccess):
//  - Metadata rules (dtype, shape, strides, alignment, flags): the library's ABI wrapper sees
//    them. The case goes straight to the ABI, host validation off, and the ABI itself must
//    return the rule's exact code, launch nothing and leave every buffer byte-identical.
//  - Value rules (slot or position out of range, duplicate slot, scale values): a wrapper sees
//    device pointers only and cannot check them without a copy and a synchronisation. The
//    harness checks them on the host before every normal call; here the case goes straight to
//    the ABI to show what the kernels do with it: nothing may be written outside the records the
//    case addresses (guard zones, page padding, other slots), and a row whose slot or position
//    is out of range must be skipped: the cache then equals the oracle's for the same case with
//    those rows' slots set to -1. A row written anyway is named ("row 1, slot 32 >= capacity 32
//    (contract §5.4): N bytes written past the cache end", out_of_range_rows.h) in the guard-zone
//    damage and the locality report; one written beyond the guard zones faults, and the fault
//    fails the test with the call's out-of-range rows (device_fault.h). (A duplicate slot or a bad scale may leave any
//    bytes inside the addressed records: that is the caller's race or garbage, not memory corruption.)
//  - Harness rules (3xx: host buffers that do not cover the case) and metadata a DLTensor cannot
//    express (strides of another length than sizes, negative offsets, an unknown op): rejected
//    by the host validation of the device backend, with the rule's code, before any upload.
// A breaker goes to the library only when the library declares it enforces the rule's code and
// the broken case lies inside its declared geometry (kvc_op_support's validation scope and
// limits, ABI 1.2); otherwise it is skipped naming the declaration: a library that declares it
// does not check 203 is not failed for what an out-of-range slot does to it, and one that answers
// 402 to a geometry it does not take is not failed for answering before validation.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <utility>

#include "testkit/backends/oracle_backend.h"
#include "testkit/device/device_fault.h"
#include "testkit/device/gpu_test_support.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/test_name.h"
#include "testkit/cases/uncovered_codes.h"
#include "kvc/validate.h"

namespace kvc {
namespace {

using MatrixEntry = testkit::RuleMatrixEntry;

enum class Route { kAbiMetadata, kAbiValues, kHostHarness };

bool is_harness_code(ErrorCode code) {
  const int n = static_cast<int>(code);
  return n >= 300 && n < 400;  // status.h: 3xx = the caller's buffers do not fit the case
}

// How a broken case is tested, from what a metadata-only validator sees of it.
Route route_of(const testkit::RuleBreaker& b, const InsertCase& broken) {
  if (is_harness_code(b.code) || !testkit::abi_inexpressible(broken).empty()) return Route::kHostHarness;
  if (validate_insert(broken, ValidationLevel::kStrict, ValueAccess::kMetadataOnly).code == b.code)
    return Route::kAbiMetadata;
  return Route::kAbiValues;
}

// Rows t < M that a device must skip: slot beyond the cache, or a position the op reads outside
// [0, max_pos).
std::vector<std::int64_t> rows_to_skip(const InsertCase& c) {
  std::vector<std::int64_t> rows;
  const std::int64_t capacity = c.cache.num_blocks * c.block_size;
  const std::int64_t max_pos = c.cos_sin.meta.size(0);
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    const std::int64_t p = c.positions.load<std::int64_t>(t);
    if (s >= capacity || (s >= 0 && (p < 0 || p >= max_pos))) rows.push_back(t);
  }
  return rows;
}

// The ABI has no "absent" for these: a NULL pointer is a malformed call, not a rule.
bool required_tensor_missing(const InsertCase& c) {
  return !c.kv.present || !c.slots.present || !c.positions.present || !c.cos_sin.present ||
         (c.op == InsertOp::kLegacy && !c.q.present);
}

class InvalidInputThroughAbi : public ::testing::TestWithParam<MatrixEntry> {};

TEST_P(InvalidInputThroughAbi, RejectedWithItsCodeOrSkippedWithoutStrayWrites) {
  KVC_REQUIRE_CUDA_DEVICE();
  const MatrixEntry& e = GetParam();
  InsertCase c = testkit::small_valid_case(e.op, e.format);
  const InsertCase base = c;
  {
    testkit::DeviceBackend probe = gpu::make_backend();
    KVC_REQUIRE_SUPPORT(probe, c);  // asked of the valid case: the broken one may name no format
  }
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(e.breaker->apply(c, out)) << "the base case must offer the breaker something to break";
  const InsertOutputs before = out;
  const Route route = route_of(*e.breaker, c);

  if (route == Route::kHostHarness) {
    testkit::DeviceBackend device = gpu::make_backend();
    const Status s = device.run(c, out);
    EXPECT_EQ(s.code, e.breaker->code) << "host harness rule: got " << s.ToString();
    EXPECT_FALSE(device.last_checks().abi_called) << "a case the harness rejects must never reach the library";
    EXPECT_EQ(out.cache, before.cache);
    EXPECT_EQ(out.q_out, before.q_out);
    return;
  }

  testkit::DeviceBackendOptions direct;
  direct.host_validation = false;
  testkit::DeviceBackend device = gpu::make_backend(direct);
  // A NULL required tensor is a malformed call (403) whatever the library validates.
  if (!required_tensor_missing(c))
    if (const testkit::Support s = device.declared().checks_breaker(base, c, e.breaker->code); !s.supported)
      GTEST_SKIP() << s.reason;
  std::string thrown;  // a 4xx status, checked below against what the rule's ABI form calls for
  try {
    device.run(c, out);
  } catch (const testkit::DeviceFaultError& fault) {
    // A write beyond every guard zone: the context is gone, nothing below can run.
    FAIL() << e.breaker->name << ": the call faulted:\n" << fault.what();
  } catch (const testkit::KernelCallError& error) {
    thrown = error.what();
  }
  EXPECT_TRUE(device.last_checks().abi_called);

  if (route == Route::kAbiMetadata) {
    // A required tensor that is absent reaches the ABI as a NULL pointer, which kernel_abi.h
    // answers with KVC_STATUS_BAD_ARGUMENT; every other rule with its own code.
    const int expected = required_tensor_missing(c) ? KVC_STATUS_BAD_ARGUMENT : static_cast<int>(e.breaker->code);
    EXPECT_EQ(device.last_checks().abi_status, expected)
        << "metadata rule " << e.breaker->name << " (E" << static_cast<int>(e.breaker->code) << " "
        << error_name(e.breaker->code) << "): the ABI must reject it with " << expected << ", got "
        << device.last_checks().abi_status << ": " << device.last_checks().abi_message << thrown;
    EXPECT_TRUE(gpu::clean(device)) << "a rejected call must launch nothing and leave every buffer unchanged";
    EXPECT_EQ(out.cache, before.cache);
    EXPECT_EQ(out.q_out, before.q_out);
    return;
  }

  // Value rule, invisible to the wrapper: accepted (or, if the library does see it, rejected
  // with its code and nothing written), and no stray writes either way.
  const int status = device.last_checks().abi_status;
  ASSERT_TRUE(status == KVC_STATUS_OK || status == static_cast<int>(e.breaker->code))
      << "value rule " << e.breaker->name << ": got " << status << ": " << device.last_checks().abi_message << thrown;
  ASSERT_TRUE(gpu::clean(device));
  if (status != KVC_STATUS_OK) {
    EXPECT_EQ(out.cache, before.cache);
    return;
  }
  testkit::ReportContext ctx;
  ctx.expected_name = "canary";
  ctx.actual_name = "backing after the call";
  const std::string stray = testkit::stray_write_report(c, before.cache, out.cache, ctx);
  EXPECT_TRUE(stray.empty()) << "value rule " << e.breaker->name << ": " << stray;

  const std::vector<std::int64_t> skipped = rows_to_skip(c);
  if (skipped.empty()) return;  // duplicate slots, scale values: any bytes inside the records
  InsertCase sanitized = c;
  for (std::int64_t t : skipped) sanitized.slots.store<std::int64_t>(t, -1);
  // The oracle refuses positions it would read out of range at the strict level: the contract
  // level judges the skipped rows. A legacy Q row still reads its position: the contract leaves
  // such a token's Q output unspecified, so only the cache is judged then (the oracle's case takes
  // position 0 there, which no skipped row's record reads).
  testkit::JudgeOptions options;
  options.oracle_level = ValidationLevel::kContract;
  if (c.op == InsertOp::kLegacy && !validate_insert(sanitized, ValidationLevel::kContract).ok()) {
    options.q_out = testkit::QOutJudgment::kUnspecified;
    for (std::int64_t t = 0; t < sanitized.num_rows(); ++t) {
      const std::int64_t p = sanitized.positions.load<std::int64_t>(t);
      if (p < 0 || p >= sanitized.cos_sin.meta.size(0)) sanitized.positions.store<std::int64_t>(t, 0);
    }
  }
  EXPECT_TRUE(gpu::passes(gpu::judge(device, sanitized, Status::Ok(), std::move(out), before, options),
                          e.breaker->name + ": rows with an out-of-range slot or position must be skipped"));
}

INSTANTIATE_TEST_SUITE_P(Rules, InvalidInputThroughAbi, ::testing::ValuesIn(testkit::rule_matrix()),
                         testkit::ParamNamedBy<testkit::rule_matrix_name>());

// The routes above only prove something if each one is taken: a table edit that turned every
// metadata rule into a "value" rule would otherwise pass silently. Needs no device.
TEST(InvalidInputRoutes, EveryRouteIsTakenAndEveryCodeIsCovered) {
  std::set<int> routes;
  std::set<ErrorCode> codes;
  for (const MatrixEntry& e : testkit::rule_matrix()) {
    InsertCase c = testkit::small_valid_case(e.op, e.format);
    InsertOutputs out = testkit::make_outputs(c);
    if (!e.breaker->apply(c, out)) continue;
    routes.insert(static_cast<int>(route_of(*e.breaker, c)));
    codes.insert(e.breaker->code);
  }
  EXPECT_EQ(routes.size(), 3u) << "metadata, value and harness routes must all be exercised";
  // The store and stacked ops' own rules go through their entry points (uncovered_codes.h).
  for (ErrorCode code : testkit::codes_without_a_negative_test(codes))
    ADD_FAILURE() << "no rule breaker for E" << static_cast<int>(code) << " " << error_name(code);
}

}  // namespace
}  // namespace kvc
