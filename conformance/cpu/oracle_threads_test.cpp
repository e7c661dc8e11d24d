// oracle_threads_test.cpp: the oracle's bytes do not depend on its thread count.
//
// Large cases run their rows on several threads (kvc/oracle/parallel_rows.h). These tests run the
// same cases with 1, 2, 3 and 8 threads and require identical cache and q output bytes. Defects
// they catch: a chunk boundary that skips or repeats a row, two threads writing the same record
// (duplicate slots, overlapping pages at the contract level: there the last row must still win),
// a Q row written by the wrong chunk, and a thread-count setting that is ignored.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include "kvc/oracle/parallel_rows.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"

namespace kvc {
namespace {

constexpr int kThreadCounts[] = {1, 2, 3, 8};
// Enough rows for 8 chunks of kMinRowsPerThread, plus a remainder so chunks differ in size.
constexpr std::int64_t kRows = 8 * oracle::kMinRowsPerThread + 37;
constexpr std::int64_t kBlockSize = 64;

InsertCase large_case(RecordFormat f, bool kv_norm, std::uint64_t seed) {
  testkit::Rng rng(seed);
  const std::int64_t blocks = 2 * kRows / kBlockSize + 1;
  testkit::CacheShape shape{f, blocks, kBlockSize, 32, is_packed(f) ? 0 : 16, 0};
  testkit::KvInputs in;
  in.kv = testkit::random_bf16_rows(rng, kRows);
  in.slots = rng.distinct(blocks * kBlockSize, kRows);
  for (std::int64_t t = 0; t < kRows; t += 97) in.slots[static_cast<std::size_t>(t)] = -1;  // skipped rows too
  for (std::int64_t t = 0; t < kRows; ++t) in.positions.push_back(t % 500);
  in.cos_sin = testkit::random_cos_sin(rng, 512);
  in.fp8_scale = 0.7f;
  InsertCase c = testkit::make_kv_only_case(shape, in);
  if (kv_norm) {
    c.kv_norm_weight = make_tensor(DType::kBF16, {kHeadDim});
    for (int d = 0; d < kHeadDim; ++d) c.kv_norm_weight.store<std::uint16_t>(d, rng.bf16_normal());
  }
  return c;
}

InsertCase large_legacy_case(RecordFormat f, std::uint64_t seed) {
  const InsertCase kv_only = large_case(f, false, seed);
  testkit::Rng rng(seed + 1);
  testkit::QuerySpec q;
  q.heads = 2;
  q.padded_heads = 8;
  q.q = testkit::random_bf16_rows(rng, kRows * q.heads);
  q.eps = 1e-6f;
  q.q_scale_inv = 2.0f;
  q.q_interleaved = f == RecordFormat::kPacked528;  // one packed format reads and writes interleaved
  return testkit::make_legacy_case(kv_only, q);
}

// make_outputs() plus room for the last page's records when the page stride is below the dense
// page (the contract level allows it; the records then reach past num_blocks * stride).
InsertOutputs outputs_for(const InsertCase& c) {
  InsertOutputs out = testkit::make_outputs(c);
  const RecordLayout& l = resolve_or_throw(c).layout;
  const CacheGeometry& g = c.cache;
  const std::int64_t records =
      l.paged_regions ? l.dense_page_bytes(g.block_size) : (g.block_size - 1) * g.token_stride_bytes() + l.data_bytes;
  const std::int64_t reach =
      g.offset_bytes + (g.num_blocks - 1) * g.page_stride_bytes() + records + testkit::kGuardBytes;
  if (reach > static_cast<std::int64_t>(out.cache.size()))
    out.cache.resize(static_cast<std::size_t>(reach), testkit::kCanary);
  return out;
}

InsertOutputs run_with_threads(const InsertCase& c, int threads, ValidationLevel level = ValidationLevel::kStrict) {
  oracle::OracleOptions o;
  o.threads = threads;
  o.level = level;
  InsertOutputs out = outputs_for(c);
  const Status s = testkit::OracleBackend(o).run(c, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

void expect_same_for_every_thread_count(const InsertCase& c, ValidationLevel level = ValidationLevel::kStrict) {
  const InsertOutputs serial = run_with_threads(c, 1, level);
  for (int threads : kThreadCounts) {
    const InsertOutputs parallel = run_with_threads(c, threads, level);
    EXPECT_TRUE(parallel.cache == serial.cache) << threads << " threads: cache bytes differ from the 1-thread run";
    EXPECT_TRUE(parallel.q_out == serial.q_out) << threads << " threads: q output bytes differ from the 1-thread run";
  }
}

std::string format_name(const ::testing::TestParamInfo<RecordFormat>& p) {
  return std::string(layout_of(p.param).name);
}

class OracleThreads : public ::testing::TestWithParam<RecordFormat> {};

TEST_P(OracleThreads, KvOnlyBytesAreTheSameForEveryThreadCount) {
  const InsertCase c = large_case(GetParam(), false, 11);
  ASSERT_TRUE(oracle::kv_rows_write_disjoint_bytes(c)) << "the case must take the parallel path";
  expect_same_for_every_thread_count(c);
}

TEST_P(OracleThreads, FusedKvNormBytesAreTheSameForEveryThreadCount) {
  expect_same_for_every_thread_count(large_case(GetParam(), true, 12));
}

TEST_P(OracleThreads, LegacyBytesAreTheSameForEveryThreadCount) {
  expect_same_for_every_thread_count(large_legacy_case(GetParam(), 13));
}

TEST_P(OracleThreads, DuplicateSlotsKeepTheLastWriterAtTheContractLevel) {
  // Strict rejects duplicate slots; the contract level runs them, and the later row must win
  // whatever the thread count: such a case runs serially.
  InsertCase c = large_case(GetParam(), false, 14);
  const std::int64_t last = c.num_inserted() - 1;
  const std::int64_t first_live = c.slots.load<std::int64_t>(1) >= 0 ? 1 : 2;
  c.slots.store<std::int64_t>(last, c.slots.load<std::int64_t>(first_live));
  ASSERT_FALSE(oracle::kv_rows_write_disjoint_bytes(c));
  expect_same_for_every_thread_count(c, ValidationLevel::kContract);
  // The duplicated slot holds the last row's record: the same bytes as inserting that row alone
  // after all the others.
  InsertCase without_last = c;
  without_last.slots.store<std::int64_t>(last, -1);
  InsertOutputs expected = run_with_threads(without_last, 8, ValidationLevel::kContract);
  InsertCase only_last = c;
  for (std::int64_t t = 0; t < last; ++t) only_last.slots.store<std::int64_t>(t, -1);
  oracle::OracleOptions o;
  o.level = ValidationLevel::kContract;
  ASSERT_TRUE(testkit::OracleBackend(o).run(only_last, expected).ok());
  EXPECT_TRUE(run_with_threads(c, 8, ValidationLevel::kContract).cache == expected.cache) << "the earlier row won";
}

TEST_P(OracleThreads, OverlappingPagesRunSeriallyAtTheContractLevel) {
  // A page stride below the dense page (contract level only) makes neighbouring pages' records
  // overlap: rows are not independent any more.
  InsertCase c = large_case(GetParam(), false, 15);
  const RecordLayout& l = layout_of(GetParam());
  const std::int64_t dense =
      l.paged_regions ? l.dense_page_bytes(kBlockSize) : kBlockSize * c.cache.token_stride_bytes();
  c.cache.stride0 = (dense / 2) / c.cache.element_bytes();
  ASSERT_FALSE(oracle::kv_rows_write_disjoint_bytes(c));
  expect_same_for_every_thread_count(c, ValidationLevel::kContract);
}

INSTANTIATE_TEST_SUITE_P(Formats, OracleThreads, ::testing::ValuesIn(kAllFormats), format_name);

TEST(ParallelRows, ChunksCoverEveryRowOnceOnTheRequestedThreads) {
  for (std::int64_t rows : {std::int64_t{0}, std::int64_t{1}, std::int64_t{255}, std::int64_t{256}, std::int64_t{1000},
                            std::int64_t{4097}}) {
    for (int threads : kThreadCounts) {
      std::vector<int> hits(static_cast<std::size_t>(rows), 0);
      std::set<std::thread::id> ids;
      std::mutex m;
      oracle::parallel_rows(rows, threads, [&](std::int64_t begin, std::int64_t end) {
        {
          std::lock_guard<std::mutex> lock(m);
          ids.insert(std::this_thread::get_id());
        }
        for (std::int64_t t = begin; t < end; ++t) ++hits[static_cast<std::size_t>(t)];  // chunks are disjoint
      });
      EXPECT_EQ(hits, std::vector<int>(static_cast<std::size_t>(rows), 1))
          << rows << " rows, " << threads << " threads";
      const std::int64_t expected_threads =
          rows == 0 ? 0 : std::min<std::int64_t>(threads, std::max<std::int64_t>(1, rows / oracle::kMinRowsPerThread));
      EXPECT_EQ(static_cast<std::int64_t>(ids.size()), expected_threads) << rows << " rows, " << threads << " threads";
    }
  }
}

TEST(ParallelRows, AnExceptionInAChunkReachesTheCaller) {
  EXPECT_THROW(oracle::parallel_rows(4096, 4,
                                     [](std::int64_t begin, std::int64_t) {
                                       if (begin > 0) throw std::runtime_error("chunk failed");
                                     }),
               std::runtime_error);
}

TEST(OracleThreadCount, OptionThenEnvironmentThenHardware) {
  ::unsetenv(oracle::kOracleThreadsEnv);
  const int hardware = oracle::resolve_oracle_threads(0);
  EXPECT_GE(hardware, 1);
  EXPECT_EQ(oracle::resolve_oracle_threads(5), 5);
  ::setenv(oracle::kOracleThreadsEnv, "3", 1);
  EXPECT_EQ(oracle::resolve_oracle_threads(0), 3);
  EXPECT_EQ(oracle::resolve_oracle_threads(2), 2) << "the option wins over the environment";
  for (const char* bad : {"0", "-2", "two", "3x", ""}) {
    ::setenv(oracle::kOracleThreadsEnv, bad, 1);
    EXPECT_EQ(oracle::resolve_oracle_threads(0), hardware) << "KVC_ORACLE_THREADS=" << bad;
  }
  ::unsetenv(oracle::kOracleThreadsEnv);
}

}  // namespace
}  // namespace kvc
