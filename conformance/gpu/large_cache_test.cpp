// large_cache_test.cpp (GPU, slow): caches and tables whose byte offsets do not fit in 32 bits.
//
// The cache lives only on the device (filled with the canary there); the oracle runs on a small
// relocated case: the same format, block size, token stride and page layout, only the pages the
// case touches (page k of the small cache is the k-th touched page of the large one), and a
// compact cos/sin table holding just the rows the case reads. The expected bytes of a touched
// page are the small cache's page k. Then:
//  - every touched page's compared bytes (its dense part and the start of its padding) equal the
//    relocated oracle's, byte for byte (the testkit's backing diff, pages renumbered);
//  - every other byte of the backing, more than 4 GiB of it, is still the canary (streamed
//    through the host and compared there, never held whole); a differing byte is located (page,
//    slot, field) and, when it is an addressed byte moved by a multiple of 2^31 or 2^32, named
//    as a 32-bit offset wrap;
//  - guard zones before and after every buffer are intact, every input unchanged; the backing
//    lies in a reserved range whose unmapped neighbours are at least as long as itself
//    (guarded_buffer.h), so a record written past its end, or a 32-bit offset wrapped below its
//    start, faults instead of landing in the cos/sin table; the fault is reported with the call
//    and its rows (device_fault.h).
//
// LargeCache: every format and both insert ops, a cache just over 4 GiB with slots in pages 0,
// in the pages holding bytes 2^31 and 2^32 (all their records), and in the last three pages (the
// last record of the last page included); a cos/sin table of 2^23 + 64 rows (2 GiB), positions
// max_pos - 1 and 0 among them: a row offset computed in 32 bits wraps.
// LargePageStride: a packed page stride of 2^31 - 16 bytes (the largest 16-byte multiple below
// the 2^31 limit) is accepted and correct, slots in all three pages (page 2 starts 32 bytes below
// 2^32); a stride of exactly 2^31 is rejected with kPageStrideTooLarge (118) by the library and
// by the contract's validation, and nothing in the 4 GiB backing is written.
// Each test skips (with the figures) when the device has too little free memory.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>
#include <utility>

#include "testkit/device/gpu_test_support.h"
#include "kvc/hex_text.h"
#include "kvc/oracle/record_codec.h"
#include "testkit/backends/backend.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/device/device_case_buffers.h"
#include "testkit/device/device_fault.h"
#include "testkit/device/owned_stream.h"
#include "kvc/validate.h"

namespace kvc {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kTwoTo31 = std::int64_t{1} << 31;
constexpr std::int64_t kTwoTo32 = std::int64_t{1} << 32;
constexpr std::int64_t kLargeBackingBytes = 4 * kGiB + 256 * kMiB;
constexpr std::int64_t kLargeMaxPos = (std::int64_t{1} << 23) + 64;  // row max_pos - 1 starts past 2^31 bytes
constexpr std::int64_t kSmallMaxPos = 4096;
constexpr std::int64_t kSlackBytes = 512 * kMiB;  // staging, small buffers, the runtime
constexpr std::int64_t kComparedPaddingBytes = 4096;
constexpr std::int64_t kRowGapBytes = 32;
constexpr std::int64_t kDpPaddingRows = 3;
constexpr std::int64_t kQueryHeads = 2;
constexpr std::size_t kReported = 8;
constexpr std::int64_t kCosSinRowBytes = kRopeDim * sizeof(float);

std::string gib(std::int64_t bytes) {
  std::ostringstream s;
  s.precision(2);
  s << std::fixed << static_cast<double>(bytes) / static_cast<double>(kGiB) << " GiB";
  return s.str();
}

// Skips the test unless `bytes` of device memory are free.
#define KVC_REQUIRE_FREE_DEVICE_MEMORY(bytes)                                             \
  do {                                                                                    \
    std::size_t kvc_free = 0, kvc_total = 0;                                              \
    ::kvc::testkit::check_cuda(cudaMemGetInfo(&kvc_free, &kvc_total), "cudaMemGetInfo");  \
    if (static_cast<std::int64_t>(kvc_free) < (bytes))                                    \
      GTEST_SKIP() << "needs " << gib(bytes) << " of free device memory; the device has " \
                   << gib(static_cast<std::int64_t>(kvc_free)) << " free of "             \
                   << gib(static_cast<std::int64_t>(kvc_total));                          \
  } while (0)

// What a large problem is made of.
struct LargeSpec {
  RecordFormat format = RecordFormat::kPacked584;
  InsertOp op = InsertOp::kKvOnly;
  std::int64_t block_size = 64;
  std::int64_t page_padding_bytes = 0;
  std::int64_t num_blocks = 0;
  std::int64_t max_pos = kSmallMaxPos;
  std::vector<std::int64_t> slots;  // large slots, -1 allowed; one kv row each
  std::uint64_t seed = 1;
};

// The large case (device only: its cos/sin table has no host bytes), the small relocated case the
// oracle runs, and how they correspond.
struct LargeProblem {
  InsertCase large;
  InsertCase small;
  std::vector<std::int64_t> pages;                                             // large page of small page k
  std::vector<std::pair<std::int64_t, std::vector<std::uint8_t>>> table_rows;  // (large position, row bytes)
  std::int64_t compared_page_bytes = 0;  // bytes compared at the start of every touched page
  std::int64_t last_slot_row = -1;       // the row holding the last record of the last page, if any
};

testkit::CacheShape shape_of(const LargeSpec& s, std::int64_t num_blocks, std::int64_t padding) {
  testkit::CacheShape shape;
  shape.format = s.format;
  shape.num_blocks = num_blocks;
  shape.block_size = s.block_size;
  shape.page_padding_bytes = padding;
  shape.row_gap_bytes = is_packed(s.format) ? 0 : kRowGapBytes;
  return shape;
}

LargeProblem make_problem(const LargeSpec& s) {
  LargeProblem p;
  testkit::Rng rng(s.seed);
  const std::int64_t tokens = static_cast<std::int64_t>(s.slots.size());
  const std::int64_t rows = tokens + kDpPaddingRows;
  const std::int64_t capacity = s.num_blocks * s.block_size;

  // Pages touched, in order, and the small slot of every large one.
  std::map<std::int64_t, std::int64_t> small_page;
  for (std::int64_t slot : s.slots)
    if (slot >= 0) small_page.emplace(slot / s.block_size, 0);
  for (auto& [page, k] : small_page) {
    k = static_cast<std::int64_t>(p.pages.size());
    p.pages.push_back(page);
  }
  std::vector<std::int64_t> small_slots;
  for (std::int64_t slot : s.slots)
    small_slots.push_back(slot < 0 ? -1 : small_page[slot / s.block_size] * s.block_size + slot % s.block_size);

  // Positions: random, with max_pos - 1 on the row of the cache's last record (or row 0) and 0 on
  // the last row; the small table holds the rows read, in order of position.
  std::vector<std::int64_t> positions;
  for (std::int64_t t = 0; t < rows; ++t) positions.push_back(rng.uniform(0, s.max_pos - 1));
  const auto last = std::find(s.slots.begin(), s.slots.end(), capacity - 1);
  p.last_slot_row = last == s.slots.end() ? 0 : static_cast<std::int64_t>(last - s.slots.begin());
  positions[static_cast<std::size_t>(p.last_slot_row)] = s.max_pos - 1;
  positions.back() = 0;
  std::map<std::int64_t, std::int64_t> table_index;
  for (std::int64_t pos : positions) table_index.emplace(pos, 0);
  std::vector<float> small_table;
  for (auto& [pos, j] : table_index) {
    j = static_cast<std::int64_t>(p.table_rows.size());
    const std::vector<float> row = testkit::random_cos_sin(rng, 1);
    small_table.insert(small_table.end(), row.begin(), row.end());
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(kCosSinRowBytes));
    std::memcpy(bytes.data(), row.data(), bytes.size());
    p.table_rows.emplace_back(pos, std::move(bytes));
  }
  std::vector<std::int64_t> small_positions;
  for (std::int64_t pos : positions) small_positions.push_back(table_index[pos]);

  testkit::KvInputs in;
  in.kv = testkit::random_bf16_rows(rng, rows);
  in.fp8_scale = 0.7f;
  in.slots = small_slots;
  in.positions = small_positions;
  in.cos_sin = small_table;
  // The small cache keeps the page layout; only a long page padding is cut (the rest of a large
  // page's padding is covered by the canary scan).
  const std::int64_t small_padding = std::min(s.page_padding_bytes, kComparedPaddingBytes);
  p.small = testkit::make_kv_only_case(shape_of(s, static_cast<std::int64_t>(p.pages.size()), small_padding), in);
  p.compared_page_bytes = p.small.cache.page_stride_bytes();

  in.slots = s.slots;
  in.positions = positions;
  in.cos_sin = testkit::random_cos_sin(rng, 1);  // replaced by a device-only table below
  p.large = testkit::make_kv_only_case(shape_of(s, s.num_blocks, s.page_padding_bytes), in);
  p.large.cos_sin.meta.sizes = {s.max_pos, kRopeDim};
  p.large.cos_sin.meta.strides = contiguous_strides(p.large.cos_sin.meta.sizes);
  p.large.cos_sin.bytes.clear();

  if (s.op == InsertOp::kLegacy) {
    testkit::QuerySpec q;
    q.heads = kQueryHeads;
    q.padded_heads = 8;
    q.q = testkit::random_bf16_rows(rng, rows * kQueryHeads);
    q.eps = 1e-6f;
    q.q_scale_inv = 1.25f;
    p.small = testkit::make_legacy_case(p.small, q);
    p.large = testkit::make_legacy_case(p.large, q);
  }
  return p;
}

std::int64_t device_bytes_needed(const LargeProblem& p) {
  return p.large.cache.backing_bytes() + p.large.cos_sin.meta.span_bytes() + kSlackBytes;
}

// The large problem on the device: canary backing, zero table with the rows read written in.
std::unique_ptr<testkit::DeviceCaseBuffers> upload(const LargeProblem& p) {
  auto resident = std::make_unique<testkit::DeviceCaseBuffers>(p.large, InsertOutputs{});
  for (const auto& [pos, bytes] : p.table_rows)
    resident->write(testkit::CaseTensor::kCosSin, pos * kCosSinRowBytes, bytes);
  return resident;
}

std::vector<testkit::ByteRange> compared_ranges(const LargeProblem& p) {
  std::vector<testkit::ByteRange> r;
  const std::int64_t stride = p.large.cache.page_stride_bytes();
  for (std::int64_t page : p.pages)
    r.push_back({p.large.cache.offset_bytes + page * stride,
                 p.large.cache.offset_bytes + page * stride + p.compared_page_bytes});
  return r;
}

// "page 7 token 3 (slot 451) [fp8 code dim 12]" for a byte of the large backing.
std::string describe(const LargeProblem& p, std::int64_t offset) {
  const oracle::ByteLocation l = oracle::locate(testkit::view_of(p.large), offset);
  std::ostringstream s;
  s << "offset " << offset;
  if (l.field == oracle::Field::kOutsideCache) return s.str() + " [after the last page: the backing's tail]";
  s << " page " << l.page;
  if (l.field == oracle::Field::kPagePadding) return s.str() + " [page padding]";
  s << " token " << l.index_in_page << " (slot " << l.slot << ") [" << oracle::field_name(l.field) << "]";
  return s.str();
}

// A byte written at `offset` that belongs at offset + k * 2^31 or + k * 2^32 in a touched page.
std::string wrap_hint(const LargeProblem& p, std::int64_t offset) {
  for (std::int64_t modulus : {kTwoTo32, kTwoTo31})
    for (const testkit::ByteRange& r : compared_ranges(p)) {
      if (r.begin <= offset) continue;
      const std::int64_t k = (r.begin - offset + modulus - 1) / modulus;
      const std::int64_t target = offset + k * modulus;
      if (target < r.end)
        return " = " + describe(p, target) + " minus " + std::to_string(k) + " x 2^" +
               (modulus == kTwoTo32 ? "32" : "31") + ": a 32-bit offset wrapped";
    }
  return {};
}

::testing::AssertionResult untouched_bytes_are_canary(const LargeProblem& p, const testkit::DeviceCaseBuffers& resident,
                                                      std::vector<testkit::ByteRange> excluded) {
  const testkit::ScanResult scan =
      resident.scan(testkit::CaseTensor::kCache, testkit::kCanary, std::move(excluded), kReported);
  std::printf("canary scan: %s of the %s backing outside the compared pages, %lld byte(s) differ\n",
              gib(scan.scanned_bytes).c_str(), gib(resident.payload_bytes(testkit::CaseTensor::kCache)).c_str(),
              static_cast<long long>(scan.differing_bytes));
  if (scan.differing_bytes == 0) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << scan.differing_bytes << " byte(s) outside the addressed records were written (expected the canary 0x"
          << std::hex << static_cast<int>(testkit::kCanary) << std::dec << "); the first:\n";
  for (const testkit::ScanResult::Difference& d : scan.first) {
    failure << "  " << describe(p, d.offset) << ": " << kvc::hex(d.actual, 2) << wrap_hint(p, d.offset) << "\n";
  }
  return failure;
}

// The touched pages judged against the relocated oracle, the rest against the canary, then damage.
::testing::AssertionResult large_backing_conforms(const LargeProblem& p, const testkit::DeviceCaseBuffers& resident,
                                                  const testkit::DeviceBackend& reference, const std::string& name) {
  InsertOutputs gathered = testkit::make_outputs(p.small);
  const std::int64_t stride = p.large.cache.page_stride_bytes();
  for (std::size_t k = 0; k < p.pages.size(); ++k) {
    const std::vector<std::uint8_t> page = resident.read(
        testkit::CaseTensor::kCache, p.large.cache.offset_bytes + p.pages[k] * stride, p.compared_page_bytes);
    std::copy(
        page.begin(), page.end(),
        gathered.cache.begin() + static_cast<std::ptrdiff_t>(static_cast<std::int64_t>(k) * p.compared_page_bytes));
  }
  if (p.large.op == InsertOp::kLegacy)
    gathered.q_out = resident.read(testkit::CaseTensor::kQOut, 0, resident.payload_bytes(testkit::CaseTensor::kQOut));
  std::string page_map = "small page k = large page P at byte offset O:";
  for (std::size_t k = 0; k < p.pages.size(); ++k)
    page_map += " " + std::to_string(k) + "=" + std::to_string(p.pages[k]) + "@" +
                std::to_string(p.large.cache.offset_bytes + p.pages[k] * stride);
  if (const auto r = gpu::passes(gpu::judge(reference, p.small, Status::Ok(), std::move(gathered)),
                                 name + " (touched pages, renumbered; " + page_map + ")");
      !r)
    return r;
  if (const auto r = untouched_bytes_are_canary(p, resident, compared_ranges(p)); !r)
    return ::testing::AssertionFailure() << name << ": " << r.message();
  if (const auto damage = resident.damage(); !damage.empty()) {
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    failure << name << ": guard zones or inputs damaged:\n";
    for (const testkit::BufferDamage& d : damage) failure << "  " << d.to_string() << "\n";
    return failure;
  }
  return ::testing::AssertionSuccess();
}

// One call of the library on the resident problem, on a stream of its own, waited for: the ABI's
// return code. A fault (a write beyond the guard zones) throws DeviceFaultError naming the call.
int call_and_wait(const LargeProblem& p, testkit::DeviceCaseBuffers& resident, std::string* message) {
  testkit::OwnedStream stream;
  const int rc = resident.enqueue(gpu::kernel_library().abi(), stream.get(), message);
  if (const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream.get())); e != cudaSuccess)
    throw testkit::device_fault(e, gpu::kernel_library().describe(),
                                p.large.op == InsertOp::kLegacy ? "kvc_legacy_insert" : "kvc_kv_only_insert",
                                testkit::describe_insert_call(p.large));
  return rc;
}

// Runs the large problem through the library on a stream and checks it.
void expect_large_problem_conforms(const LargeProblem& p, const std::string& name) {
  testkit::DeviceBackend reference = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(reference, p.small);
  ASSERT_TRUE(validate_insert(p.large, ValidationLevel::kStrict, ValueAccess::kMetadataOnly).ok());
  ASSERT_TRUE(validate_insert(p.small, ValidationLevel::kStrict, ValueAccess::kMetadataAndValues).ok());
  KVC_REQUIRE_FREE_DEVICE_MEMORY(device_bytes_needed(p));
  std::printf("%s: backing %s (%lld pages of %lld B), cos/sin table %s (max_pos %lld), %zu touched pages\n",
              name.c_str(), gib(p.large.cache.backing_bytes()).c_str(),
              static_cast<long long>(p.large.cache.num_blocks),
              static_cast<long long>(p.large.cache.page_stride_bytes()), gib(p.large.cos_sin.meta.span_bytes()).c_str(),
              static_cast<long long>(p.large.cos_sin.meta.size(0)), p.pages.size());
  const std::unique_ptr<testkit::DeviceCaseBuffers> resident = upload(p);
  std::string message;
  const int rc = call_and_wait(p, *resident, &message);
  ASSERT_EQ(rc, 0) << "a valid case was rejected: " << message;
  EXPECT_TRUE(large_backing_conforms(p, *resident, reference, name));
}

// ---- a cache over 4 GiB ----

struct LargeCacheParam {
  RecordFormat format;
  InsertOp op;
  std::string name() const {
    return testkit::format_test_name(format) + (op == InsertOp::kLegacy ? "_Legacy" : "_KvOnly");
  }
};

void PrintTo(const LargeCacheParam& p, std::ostream* os) { *os << p.name(); }

LargeSpec over_four_gib_spec(const LargeCacheParam& param) {
  LargeSpec s;
  s.format = param.format;
  s.op = param.op;
  s.block_size = 64;
  s.page_padding_bytes = testkit::upstream_page_padding_bytes(param.format, s.block_size);
  const std::int64_t stride = testkit::make_geometry(shape_of(s, 1, s.page_padding_bytes)).page_stride_bytes();
  s.num_blocks = (kLargeBackingBytes + stride - 1) / stride;
  s.max_pos = kLargeMaxPos;
  s.seed = 0x4C43u + static_cast<std::uint64_t>(param.format) * 2u + static_cast<std::uint64_t>(param.op);
  const std::int64_t bs = s.block_size, last = s.num_blocks - 1;
  for (std::int64_t page : {kTwoTo31 / stride, kTwoTo32 / stride})
    for (std::int64_t i = 0; i < bs; ++i) s.slots.push_back(page * bs + i);
  for (std::int64_t page : {std::int64_t{0}, last - 2, last - 1})
    for (std::int64_t i : {std::int64_t{0}, bs / 2, bs - 1}) s.slots.push_back(page * bs + i);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, bs - 2, bs - 1}) s.slots.push_back(last * bs + i);
  testkit::Rng order(s.seed);
  for (std::size_t i = s.slots.size() - 1; i > 0; --i)
    std::swap(s.slots[i], s.slots[static_cast<std::size_t>(order.uniform(0, static_cast<std::int64_t>(i)))]);
  // Two skipped rows (one in the page holding byte 2^32): their records stay canary.
  for (std::size_t i = 0; i < s.slots.size(); ++i)
    if (s.slots[i] == (kTwoTo32 / stride) * bs + 5 || s.slots[i] == (kTwoTo31 / stride) * bs + 9) s.slots[i] = -1;
  return s;
}

class LargeCache : public ::testing::TestWithParam<LargeCacheParam> {};

TEST_P(LargeCache, RecordsPastFourGiBEqualOracleAndNothingElseIsWritten) {
  KVC_REQUIRE_CUDA_DEVICE();
  const LargeProblem p = make_problem(over_four_gib_spec(GetParam()));
  ASSERT_GT(p.large.cache.backing_bytes(), 4 * kGiB);
  ASSERT_EQ(p.pages.back(), p.large.cache.num_blocks - 1) << "the last page is not addressed";
  ASSERT_EQ(p.large.slots.load<std::int64_t>(p.last_slot_row), p.large.cache.num_blocks * p.large.block_size - 1);
  ASSERT_EQ(p.large.positions.load<std::int64_t>(p.last_slot_row), p.large.cos_sin.meta.size(0) - 1);
  ASSERT_GT((p.large.cos_sin.meta.size(0) - 1) * kCosSinRowBytes, kTwoTo31);
  expect_large_problem_conforms(p, GetParam().name());
}

std::vector<LargeCacheParam> large_cache_params() {
  std::vector<LargeCacheParam> v;
  for (RecordFormat f : kAllFormats)
    for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) v.push_back({f, op});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Formats, LargeCache, ::testing::ValuesIn(large_cache_params()),
                         [](const ::testing::TestParamInfo<LargeCacheParam>& p) { return p.param.name(); });

// ---- the packed page-stride limit ----

constexpr std::int64_t kStrideBlockSize = 16;
// The largest page stride the kernels accept: below 2^31 (kMaxPackedPageStride) and a multiple of
// the 16-byte alignment.
constexpr std::int64_t kStrideBelowLimit = (kMaxPackedPageStride / kAlignment) * kAlignment;
static_assert(kStrideBelowLimit == kTwoTo31 - 16, "2^31 - 16 bytes");

LargeSpec stride_spec(const LargeCacheParam& param, std::int64_t page_stride, std::int64_t num_blocks) {
  LargeSpec s;
  s.format = param.format;
  s.op = param.op;
  s.block_size = kStrideBlockSize;
  s.page_padding_bytes = page_stride - layout_of(param.format).dense_page_bytes(kStrideBlockSize);
  s.num_blocks = num_blocks;
  s.max_pos = kSmallMaxPos;
  s.seed = 0x5354u + static_cast<std::uint64_t>(param.format) * 2u + static_cast<std::uint64_t>(param.op);
  const std::int64_t bs = kStrideBlockSize, last = num_blocks - 1;
  for (std::int64_t page = 0; page < last; ++page)
    for (std::int64_t i : {std::int64_t{0}, bs - 1}) s.slots.push_back(page * bs + i);
  for (std::int64_t i = bs - 1; i >= 0; --i) s.slots.push_back(last * bs + i);  // the whole last page
  return s;
}

class LargePageStride : public ::testing::TestWithParam<LargeCacheParam> {};

TEST_P(LargePageStride, JustBelowTwoToThe31IsAcceptedAndCorrect) {
  KVC_REQUIRE_CUDA_DEVICE();
  const LargeProblem p = make_problem(stride_spec(GetParam(), kStrideBelowLimit, 3));
  ASSERT_EQ(p.large.cache.page_stride_bytes(), kTwoTo31 - 16);
  ASSERT_EQ(p.pages.back(), 2);
  ASSERT_LT(p.large.cache.offset_bytes + 2 * p.large.cache.page_stride_bytes(), kTwoTo32)
      << "page 2 starts below 2^32 and its records cross it";
  expect_large_problem_conforms(p, GetParam().name() + "_PageStride2^31-16");
}

TEST_P(LargePageStride, AtTwoToThe31IsRejectedWithItsCodeAndNothingIsWritten) {
  KVC_REQUIRE_CUDA_DEVICE();
  const LargeProblem p = make_problem(stride_spec(GetParam(), kTwoTo31, 2));
  ASSERT_EQ(p.large.cache.page_stride_bytes(), kTwoTo31);
  const Status host = validate_insert(p.large, ValidationLevel::kStrict, ValueAccess::kMetadataOnly);
  ASSERT_EQ(host.code, ErrorCode::kPageStrideTooLarge) << host.ToString();
  testkit::DeviceBackend reference = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(reference, p.small);
  KVC_REQUIRE_FREE_DEVICE_MEMORY(device_bytes_needed(p));
  const std::unique_ptr<testkit::DeviceCaseBuffers> resident = upload(p);
  std::string message;
  const int rc = call_and_wait(p, *resident, &message);
  EXPECT_EQ(rc, static_cast<int>(ErrorCode::kPageStrideTooLarge))
      << "a packed page stride of 2^31 bytes must be rejected with kPageStrideTooLarge (118); the library said " << rc
      << ": " << message;
  std::printf("rejected with %d: %s\n", rc, message.c_str());
  EXPECT_TRUE(untouched_bytes_are_canary(p, *resident, {}));
  const auto damage = resident->damage();
  for (const testkit::BufferDamage& d : damage) ADD_FAILURE() << d.to_string();
}

INSTANTIATE_TEST_SUITE_P(PackedFormats, LargePageStride,
                         ::testing::Values(LargeCacheParam{RecordFormat::kPacked584, InsertOp::kKvOnly},
                                           LargeCacheParam{RecordFormat::kPacked584, InsertOp::kLegacy},
                                           LargeCacheParam{RecordFormat::kPacked528, InsertOp::kKvOnly},
                                           LargeCacheParam{RecordFormat::kPacked528, InsertOp::kLegacy}),
                         [](const ::testing::TestParamInfo<LargeCacheParam>& p) { return p.param.name(); });

}  // namespace
}  // namespace kvc
