// guarded_layout_test.cpp: where a guarded buffer's payload and guard zones sit in its allocation
// (the VMM granularity's rounding, the offset-0 placement, no guards), with no device.
#include <gtest/gtest.h>

#include <cstdint>

#include "testkit/device/guarded_layout.h"

namespace kvc {
namespace {

using testkit::GuardedLayout;
using testkit::PayloadPlacement;

constexpr std::int64_t kTwoMiB = std::int64_t{2} << 20;
constexpr std::int64_t kAlignment = 256;

// Defect caught: a layout whose parts do not add up to the allocation (a guard byte outside it,
// or allocated bytes neither payload nor guard, which no check would look at).
void expect_whole(const GuardedLayout& l, std::int64_t payload, std::int64_t granularity) {
  EXPECT_EQ(l.guard_before + payload + l.guard_after, l.allocation_bytes);
  EXPECT_EQ(l.allocation_bytes % granularity, 0);
  EXPECT_EQ(l.guard_before % kAlignment, 0) << "the payload must keep cudaMalloc's alignment";
}

// Defect caught: the rounding slack put after the payload, so that a write a few pages past the
// end stays in mapped memory instead of faulting.
TEST(GuardedLayout, BetweenGuardsKeepsTheGuardAfterAtTheRequestedLength) {
  const std::int64_t payload = 18752 + 256, guard = 9472;
  const GuardedLayout l =
      testkit::guarded_layout(payload, guard, PayloadPlacement::kBetweenGuards, kTwoMiB, kAlignment);
  expect_whole(l, payload, kTwoMiB);
  EXPECT_EQ(l.allocation_bytes, kTwoMiB);
  EXPECT_GE(l.guard_after, guard);
  EXPECT_LT(l.guard_after, guard + kAlignment);
  EXPECT_GE(l.guard_before, guard) << "page -1 must land in the guard before";
}

// Defect caught: the offset-0 placement leaving a guard before the payload (page -1 would not
// reach the unmapped range) or no guard after it.
TEST(GuardedLayout, AtMappingStartPutsThePayloadAtByteZero) {
  const std::int64_t payload = 4096 * 3 + 100, guard = 4096;
  const GuardedLayout l =
      testkit::guarded_layout(payload, guard, PayloadPlacement::kAtMappingStart, kTwoMiB, kAlignment);
  expect_whole(l, payload, kTwoMiB);
  EXPECT_EQ(l.guard_before, 0);
  EXPECT_GE(l.guard_after, guard);
}

// Defect caught: a payload larger than one granule rounded down (guards cut) or the plain
// cudaMalloc layout padded beyond the guards.
TEST(GuardedLayout, LargePayloadsAndCudaMallocGetTheRequestedGuards) {
  const std::int64_t large = 5 * kTwoMiB + 12345 * kAlignment, guard = std::int64_t{1} << 20;
  const GuardedLayout l = testkit::guarded_layout(large, guard, PayloadPlacement::kBetweenGuards, kTwoMiB, kAlignment);
  expect_whole(l, large, kTwoMiB);
  EXPECT_GE(l.guard_before, guard);
  EXPECT_GE(l.guard_after, guard);
  const GuardedLayout plain = testkit::guarded_layout(1000, 4096, PayloadPlacement::kBetweenGuards, 1, kAlignment);
  EXPECT_EQ(plain.guard_before, 4096);
  EXPECT_EQ(plain.guard_after, 4096);
  EXPECT_EQ(plain.allocation_bytes, 1000 + 2 * 4096);
}

// Defect caught: KVC_DEVICE_GUARDS=off still padding the allocation (memcheck would not see an
// access just past the payload), or a 0-byte allocation for an empty payload.
TEST(GuardedLayout, NoGuardsIsThePayloadAlone) {
  const GuardedLayout l = testkit::guarded_layout(1000, 0, PayloadPlacement::kBetweenGuards, 1, kAlignment);
  EXPECT_EQ(l.allocation_bytes, 1000);
  EXPECT_EQ(l.guard_before, 0);
  EXPECT_EQ(l.guard_after, 0);
  EXPECT_EQ(testkit::guarded_layout(0, 0, PayloadPlacement::kAtMappingStart, 1, kAlignment).allocation_bytes, 1);
}

}  // namespace
}  // namespace kvc
