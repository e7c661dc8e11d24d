// out_of_bounds_test.cpp (GPU): out-of-bounds writes anywhere are seen, and blamed on the rows
// that address them.
//
// GuardedLayoutOnDevice: every guarded buffer lies in a reserved range with unmapped neighbours of at
// least 1 GiB, its guard zones hold the pattern the host expects (written by a kernel), and a
// byte changed anywhere in them, the rounding slack included, is found (by the scan kernel) and
// located. Catches: a silent fallback to cudaMalloc, a fill or scan kernel that disagrees with the
// host's pattern, a guard slack nobody checks.
// OutOfRangeRowsThroughAbi (every format, the writes_out_of_range_rows double, host validation off): rows
// whose slots lie just past the cache are all named, each with its slot, the capacity and the
// bytes it wrote past the end; a slot -1 row's page -1 record is caught by the guard before the
// cache and named. Catches: only the first bad row named, a row reported as a foreign slot or as
// nameless guard damage.
// OutOfRangeFaults (a child process each, since a fault leaves the context unusable): a record
// far past the end faults and the report names the entry point and the row; a page -1 record
// before a cache at byte 0 of its mapping faults and names the row; the report is on stderr
// before the process dies. Catches: a far write that corrupts silently, a fault reported without
// its op or culprit, a report lost with the process.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conformance/gpu/out_of_bounds_cases.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/device/device_allocation.h"
#include "testkit/device/device_fault.h"
#include "testkit/device/gpu_test_support.h"
#include "testkit/device/guarded_tensors.h"
#include "testkit/process/program_run.h"

// Skips on a device without VMM (with the reason); fails when the device has it but guarded
// buffers do not get reserved ranges.
#define KVC_REQUIRE_RESERVED_RANGES()                                                                          \
  do {                                                                                                         \
    const std::string kvc_why = ::kvc::testkit::reserved_range_unavailable();                                  \
    if (kvc_why == ::kvc::testkit::kDeviceWithoutVmm) GTEST_SKIP() << kvc_why;                                 \
    ASSERT_TRUE(kvc_why.empty()) << "guarded buffers get no reserved range on a device with VMM: " << kvc_why; \
  } while (0)

namespace kvc {
namespace {

const testkit::KernelLibrary& planted_library() {
  static const testkit::KernelLibrary library = testkit::KernelLibrary::open(KVC_OOB_DOUBLE);
  return library;
}

std::string damage_text(const std::vector<testkit::BufferDamage>& damage) {
  std::string s;
  for (const testkit::BufferDamage& d : damage) s += d.to_string() + "\n";
  return s;
}

// ---- the layout ----

// Defect caught: guarded buffers on cudaMalloc (no unmapped neighbours) on a device with VMM.
TEST(GuardedLayoutOnDevice, BuffersLieInReservedRangesWithUnmappedNeighbours) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  testkit::GuardedTensors call(testkit::TransferPath::kLegacyStream);
  const auto between = call.add("between", 18752, testkit::BufferRole::kOutput, 9376);
  const auto at_start =
      call.add("at start", 18752, testkit::BufferRole::kOutput, 9376, testkit::PayloadPlacement::kAtMappingStart);
  for (const auto id : {between, at_start}) {
    const testkit::GuardedDeviceBuffer& b = call.buffer(id);
    SCOPED_TRACE(b.name());
    EXPECT_EQ(b.allocation_kind(), testkit::AllocationKind::kReservedRange);
    EXPECT_GE(b.unmapped_before_bytes(), testkit::kMinUnmappedNeighbourBytes);
    EXPECT_GE(b.unmapped_after_bytes(), testkit::kMinUnmappedNeighbourBytes);
    EXPECT_GE(b.guard_after_bytes(), 9376);
  }
  EXPECT_GE(call.buffer(between).guard_before_bytes(), 9376);
  EXPECT_EQ(call.buffer(at_start).guard_before_bytes(), 0);
}

// Defect caught: a fill kernel whose pattern is not the host's (the scan kernel, sharing it,
// would never notice), or a scan that misses a changed byte: at the start of the slack, just
// before the payload, just after it, at the end of the allocation.
TEST(GuardedLayoutOnDevice, GuardZonesHoldTheHostPatternAndEveryChangedByteIsFound) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  testkit::GuardedTensors call(testkit::TransferPath::kLegacyStream);
  testkit::GuardedDeviceBuffer& b = call.buffer(call.add("cache", 18752, testkit::BufferRole::kOutput, 9376));
  b.fill(testkit::kCanary);
  const std::int64_t before = b.guard_before_bytes(), after = b.guard_after_bytes(), n = b.payload_bytes();
  std::vector<std::uint8_t> zone(static_cast<std::size_t>(after));
  testkit::check_cuda(cudaMemcpy(zone.data(), b.payload() + n, zone.size(), cudaMemcpyDeviceToHost), "reading");
  for (std::int64_t i = 0; i < after; ++i)
    ASSERT_EQ(zone[static_cast<std::size_t>(i)], testkit::guard_byte(i)) << "guard after, byte " << i;
  std::vector<testkit::BufferDamage> damage;
  call.check(testkit::CallOutcome::kAccepted, &damage);
  ASSERT_TRUE(damage.empty()) << damage_text(damage);

  const std::uint8_t stray = 0x5A;
  for (const std::int64_t offset : {-before, std::int64_t{-1}, n, n + after - 1}) {
    const std::uint8_t expected = testkit::guard_byte(offset < 0 ? offset + before : offset - n);
    const std::uint8_t value = expected == stray ? 0x5B : stray;
    testkit::check_cuda(cudaMemcpy(b.payload() + offset, &value, 1, cudaMemcpyHostToDevice), "planting");
  }
  call.check(testkit::CallOutcome::kAccepted, &damage);
  ASSERT_EQ(damage.size(), 2u) << damage_text(damage);
  EXPECT_EQ(damage[0].region, "guard before");
  EXPECT_EQ(damage[0].bytes, 2);
  EXPECT_EQ(damage[0].offset, -before);
  ASSERT_EQ(damage[0].changed.size(), 2u);
  EXPECT_EQ(damage[0].changed[1].begin, -1);
  EXPECT_EQ(damage[1].region, "guard after");
  EXPECT_EQ(damage[1].bytes, 2);
  EXPECT_EQ(damage[1].offset, n);
  ASSERT_EQ(damage[1].changed.size(), 2u);
  EXPECT_EQ(damage[1].changed[1].end, n + after);
}

// ---- rows out of range, caught by the guard zones ----

class OutOfRangeRowsThroughAbi : public ::testing::TestWithParam<RecordFormat> {};

// The device backend over the double, with nothing between the case and the library.
testkit::DeviceBackend direct_backend() {
  testkit::DeviceBackendOptions o;
  o.host_validation = false;
  return gpu::make_backend(planted_library(), o);
}

// Runs `c` through the double: the guard damage and the host backing's locality report together.
std::string reports_of(const InsertCase& c, testkit::DeviceBackend& device) {
  InsertOutputs out = testkit::make_outputs(c);
  const InsertOutputs before = out;
  const Status s = device.run(c, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return damage_text(device.last_checks().damage) + testkit::stray_write_report(c, before.cache, out.cache, {});
}

std::string past_end(std::int64_t row, std::int64_t slot) {
  return "row " + std::to_string(row) + ", slot " + std::to_string(slot) + " >= capacity " +
         std::to_string(gpu::kOobCapacity) + " (contract §5.4): ";
}

// Whether `text` has the line `prefix` N `suffix` with most of a record's bytes, N <= record_bytes.
// The guard reports bytes that differ from its pattern: a written byte that happens to equal the
// pattern's byte at its address is invisible (about 1 in 256 of 0x5A writes), so N is the record
// width minus a few, never more.
::testing::AssertionResult named_with_most_bytes(const std::string& text, const std::string& prefix,
                                                 const std::string& suffix, std::int64_t record_bytes) {
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    const std::size_t digits = at + prefix.size();
    std::size_t end = digits;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == digits || text.compare(end, suffix.size(), suffix) != 0) continue;
    const std::int64_t n = std::stoll(text.substr(digits, end - digits));
    if (n <= record_bytes && n > record_bytes / 2) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no line '" << prefix << "<N>" << suffix << "' with " << record_bytes / 2
                                       << " < N <= " << record_bytes << " in:\n"
                                       << text;
}

// Defect caught: only the first bad row named; a row's bytes past the end left nameless.
TEST_P(OutOfRangeRowsThroughAbi, RowsJustPastTheEndAreAllNamed) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  const InsertCase c = gpu::case_with_slots(GetParam(), {3, 32, 39, 47, 10});
  testkit::DeviceBackend device = direct_backend();
  KVC_REQUIRE_SUPPORT(device, c);
  const std::string text = reports_of(c, device);
  std::printf("%s", text.c_str());
  // Row 1's record starts in the backing's tail (the host report has its first bytes, the guard
  // the rest); rows 2 and 3 lie wholly in the guard zone after the cache.
  const std::int64_t record = layout_of(GetParam()).record_bytes();
  const std::string written = " bytes written past the cache end";
  EXPECT_NE(text.find(past_end(1, 32)), std::string::npos) << text;
  EXPECT_TRUE(named_with_most_bytes(text, past_end(2, 39), written, record));
  EXPECT_TRUE(named_with_most_bytes(text, past_end(3, 47), written, record));
  EXPECT_EQ(text.find("no row addresses"), std::string::npos) << text;
  EXPECT_EQ(text.find("FOREIGN SLOT"), std::string::npos) << text;
  EXPECT_EQ(text.find("row 0,"), std::string::npos) << "row 0's slot is in range: " << text;
}

// Defect caught: a page -1 record (SGLang's slot -1) reported without its row, or not at all.
TEST_P(OutOfRangeRowsThroughAbi, PageMinusOneIsCaughtByTheGuardBeforeAndNamed) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  const InsertCase c = gpu::case_with_slots(GetParam(), {3, -1, 9});
  testkit::DeviceBackend device = direct_backend();
  KVC_REQUIRE_SUPPORT(device, c);
  const std::string text = reports_of(c, device);
  std::printf("%s", text.c_str());
  EXPECT_NE(text.find("guard before"), std::string::npos) << text;
  EXPECT_TRUE(named_with_most_bytes(text, "row 1, slot -1: page -1, ", " bytes before the cache",
                                    layout_of(GetParam()).record_bytes()));
}

INSTANTIATE_TEST_SUITE_P(Formats, OutOfRangeRowsThroughAbi, ::testing::ValuesIn(kAllFormats),
                         testkit::ParamNamedBy<testkit::format_test_name>());

// ---- rows far out of range: faults, in a child process ----

testkit::ProgramRun run_child(const std::string& scenario, const std::string& ending) {
  const testkit::ProgramRun r =
      testkit::run_program(KVC_OOB_FAULT_CHILD, "'" + std::string(KVC_OOB_DOUBLE) + "' " + scenario + " " + ending,
                           ::testing::TempDir() + "kvc-oob-" + scenario + "-" + ending + ".log");
  testkit::print_program_run(r, 8000);
  return r;
}

// Defect caught: a record ~570 KiB past a small cache written silently into whatever lies there;
// a fault reported without the entry point or the row.
TEST(OutOfRangeFaults, FarPastTheEndFaultsAndTheReportNamesTheRow) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  const testkit::ProgramRun r = run_child("far-past-end", "catch");
  EXPECT_EQ(r.status, 3) << "the call must fault and be reported as DeviceFaultError";
  EXPECT_NE(r.output.find("CUDA fault in kvc_kv_only_insert: cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_NE(r.output.find("rows addressing outside the cache (likely culprits):"), std::string::npos);
  EXPECT_NE(r.output.find(past_end(1, 1032) + "page 64"), std::string::npos);
}

// Defect caught: the report lost when the faulting process dies before anyone catches it.
TEST(OutOfRangeFaults, TheReportIsPrintedBeforeTheProcessDies) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  const testkit::ProgramRun r = run_child("far-past-end", "abort");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.status, 3);
  EXPECT_NE(r.output.find("CUDA fault in kvc_kv_only_insert"), std::string::npos);
  EXPECT_NE(r.output.find(past_end(1, 1032) + "page 64"), std::string::npos);
}

// Defect caught: a cache at byte 0 of its allocation whose page -1 write goes unseen.
TEST(OutOfRangeFaults, PageMinusOneBeforeACacheAtByteZeroFaultsAndTheReportNamesTheRow) {
  KVC_REQUIRE_CUDA_DEVICE();
  KVC_REQUIRE_RESERVED_RANGES();
  const testkit::ProgramRun r = run_child("page-minus-one-at-byte-0", "catch");
  EXPECT_EQ(r.status, 3) << "the call must fault and be reported as DeviceFaultError";
  EXPECT_NE(r.output.find("CUDA fault in kvc_kv_only_insert: cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_NE(r.output.find("row 1, slot -1: page -1"), std::string::npos);
}

}  // namespace
}  // namespace kvc
