// ue8m0_exhaustive_test.cpp: the two scale-exponent rules over every positive normal fp32 q, and
// over every bf16 amax the packed formats can produce.
//
// The H200 measurement (docs/contract.md §2.3) found device ceilf(log2f(q)) below the
// exact ceil(log2 q) on exactly 3676 inputs q = 2^k (1 + n 2^-23), n = 1..T(k). The oracle's
// kDeviceLog2f rule must reproduce that set exactly, and both rules must agree on bf16 data.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "kvc/contract.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/ue8m0.h"
#include "testkit/compare/exhaustive_sweep.h"

namespace kvc::oracle {
namespace {

// T(k) as measured on the device: how many fp32 steps above 2^k the fp32 log2 still rounds to k.
// The table is the same on both sides of 2^0 once k <= 0 is shifted by one: T(-64) = T(63).
int measured_steps_above_power(int k) {
  const int m = k > 0 ? k : -k - 1;
  if (m >= 64) return 22;
  if (m >= 32) return 11;
  if (m >= 16) return 5;
  if (m >= 8) return 2;
  if (m >= 4) return 1;
  return 0;
}

bool in_measured_set(std::uint32_t bits) {
  const int k = static_cast<int>(bits >> 23) - 127;
  const std::uint32_t n = bits & 0x7FFFFFu;
  return n >= 1 && n <= static_cast<std::uint32_t>(measured_steps_above_power(k));
}

constexpr std::uint32_t kFirstNormal = 0x00800000u;
constexpr std::uint32_t kLastFinite = 0x7F7FFFFFu;
constexpr std::uint64_t kMeasuredDisagreements = 3676;

TEST(Ue8m0Exhaustive, RulesDifferExactlyOnTheDeviceMeasuredSet) {
  std::uint64_t expected_set_size = 0;
  for (std::uint32_t e = 1; e < 255; ++e) expected_set_size += measured_steps_above_power(static_cast<int>(e) - 127);
  ASSERT_EQ(expected_set_size, kMeasuredDisagreements) << "the T(k) table must describe 3676 values";

  std::atomic<std::uint64_t> disagreements{0};
  const auto r = testkit::sweep_u32(kFirstNormal, kLastFinite, [&](std::uint32_t u) {
    const float q = float_of(u);
    const bool differ = scale_exponent(q, ExponentRule::kDeviceLog2f) != scale_exponent(q, ExponentRule::kExact);
    if (differ) disagreements.fetch_add(1, std::memory_order_relaxed);
    return differ == in_measured_set(u);
  });
  std::printf("%s\n", testkit::describe("device_log2f/exact disagreement set vs H200 measurement", r).c_str());
  std::printf("rules disagree on %llu positive normal q (H200: %llu)\n",
              static_cast<unsigned long long>(disagreements.load()),
              static_cast<unsigned long long>(kMeasuredDisagreements));
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(disagreements.load(), kMeasuredDisagreements);
}

TEST(Ue8m0Exhaustive, RulesAgreeForEveryBf16Amax) {
  int checked = 0;
  auto check = [&](float amax) {
    const float q = amax / kFp8Max;
    ++checked;
    EXPECT_EQ(scale_exponent(q, ExponentRule::kDeviceLog2f), scale_exponent(q, ExponentRule::kExact))
        << "amax " << amax << " q " << q;
  };
  check(kAmaxFloor);                             // the floor is not a bf16 value, but every all-small block uses it
  for (std::uint32_t b = 0; b < 0x7F80u; ++b) {  // positive finite bf16
    const float amax = bf16_to_float(static_cast<std::uint16_t>(b));
    if (amax >= kAmaxFloor) check(amax);
  }
  std::printf("bf16 amax values checked (>= 1e-4, plus the floor): %d\n", checked);
  EXPECT_GE(checked, 18000) << "141 binades of 128 bf16 values lie above the floor";
}

}  // namespace
}  // namespace kvc::oracle
