// device_backend_test.cpp: the parts of the device backend that need no GPU, so they run in CI:
// the host-side harness validation (a rejected case never reaches the library and touches no
// device), what a library declares (support and its reason), and which cases DLPack cannot carry.
//
// Catches: a harness that forwards value-rule violations (duplicate slots, slots past the cache)
// to a metadata-only wrapper, an unsupported case reported as anything but skipped, and hostile
// metadata reaching the ABI as a malformed DLTensor.
#include <gtest/gtest.h>

#include "testkit/backends/backing.h"
#include "testkit/device/device_backend.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"

namespace kvc::testkit {
namespace {

const RuleBreaker& breaker(const std::string& name) {
  for (const RuleBreaker& b : rule_breakers())
    if (b.name == name) return b;
  throw std::runtime_error("no rule breaker " + name);
}

TEST(DeviceBackendHarness, ValueAndHarnessRulesAreRejectedOnTheHostBeforeTheLibrary) {
  DeviceBackend device(KernelLibrary::builtin());
  for (const char* name :
       {"DuplicateSlot", "SlotBeyondTheCache", "PositionAtMaxPos", "Fp8ScaleNaN", "BackingTooSmall"}) {
    InsertCase c = small_valid_case(InsertOp::kKvOnly, RecordFormat::kFp8_512);
    InsertOutputs out = make_outputs(c);
    const RuleBreaker& b = breaker(name);
    ASSERT_TRUE(b.apply(c, out)) << name;
    const InsertOutputs before = out;
    EXPECT_EQ(device.run(c, out).code, b.code) << name;
    EXPECT_FALSE(device.last_checks().abi_called) << name;
    EXPECT_EQ(out.cache, before.cache) << name;
  }
  EXPECT_EQ(device.abi_calls(), 0) << "no case above may reach the kernel library";
}

TEST(DeviceBackendHarness, UnsupportedCasesCarryTheLibrarysReason) {
  const DeviceBackend device(KernelLibrary::open(KVC_FAKE_SUPPORTS_NOTHING));
  const Support s = device.supports(small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked528));
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("a fake library implements nothing"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("packed528"), std::string::npos) << s.reason;
  EXPECT_FALSE(device.supports_kv_norm().supported);
}

TEST(DeviceBackendHarness, OurKernelsSupportEveryOpAndFormatAndDeclareTheirRsqrt) {
  const DeviceBackend device(KernelLibrary::builtin());
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
    for (RecordFormat f : kAllFormats) {
      const InsertCase c = small_valid_case(op, f);
      EXPECT_TRUE(device.supports(c).supported) << device.supports(c).reason;
      EXPECT_EQ(device.rsqrt_modes(c).q_norm, RsqrtMode::kCorrectlyRounded);
      EXPECT_EQ(device.rsqrt_modes(c).kv_norm, RsqrtMode::kCorrectlyRounded);
    }
  EXPECT_TRUE(device.supports_kv_norm().supported);
}

TEST(DeviceBackendHarness, MetadataDlpackCannotCarryIsNamed) {
  const InsertCase valid = small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
  EXPECT_EQ(abi_inexpressible(valid), "");
  InsertCase c = valid;
  c.kv.meta.strides.push_back(1);
  EXPECT_NE(abi_inexpressible(c).find("kv: 2 sizes but 3 strides"), std::string::npos) << abi_inexpressible(c);
  c = valid;
  c.q_out.offset_bytes = -16;
  EXPECT_NE(abi_inexpressible(c).find("q_out: negative byte offset"), std::string::npos) << abi_inexpressible(c);
  c = valid;
  c.op = static_cast<InsertOp>(7);
  EXPECT_NE(abi_inexpressible(c).find("no ABI entry point"), std::string::npos) << abi_inexpressible(c);
}

TEST(DeviceBuffers, GuardPatternHasNoRunsAndIsNotTheCanary) {
  int equal_neighbours = 0, canary_bytes = 0;
  for (std::int64_t i = 0; i < kDeviceGuardBytes; ++i) {
    equal_neighbours += guard_byte(i) == guard_byte(i + 1);
    canary_bytes += guard_byte(i) == kCanary;
  }
  // A constant fill or a one-byte shift matches at most a few positions by chance.
  EXPECT_LT(equal_neighbours, kDeviceGuardBytes / 64);
  EXPECT_LT(canary_bytes, kDeviceGuardBytes / 64);
}

}  // namespace
}  // namespace kvc::testkit
