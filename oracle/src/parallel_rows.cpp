// parallel_rows.cpp: chunked std::thread parallel-for and the KV side's disjointness test (see
// parallel_rows.h).
#include "kvc/oracle/parallel_rows.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace kvc::oracle {
namespace {
// A typo in KVC_ORACLE_THREADS (an extra zero or three) must not start a million threads.
constexpr long kMaxThreadsFromEnv = 1024;
}  // namespace

int resolve_oracle_threads(int requested) {
  if (requested > 0) return requested;
  if (const char* env = std::getenv(kOracleThreadsEnv)) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return static_cast<int>(std::min(n, kMaxThreadsFromEnv));
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void parallel_rows(std::int64_t rows, int threads, const std::function<void(std::int64_t, std::int64_t)>& body,
                   std::int64_t min_rows_per_thread) {
  if (rows <= 0) return;
  const std::int64_t by_size = std::max<std::int64_t>(1, rows / std::max<std::int64_t>(1, min_rows_per_thread));
  const std::int64_t n = std::min<std::int64_t>(std::max(1, threads), by_size);
  if (n == 1) {
    body(0, rows);
    return;
  }
  // Chunk k is [k * rows / n, (k + 1) * rows / n): sizes differ by at most one row.
  auto chunk_begin = [rows, n](std::int64_t k) { return k * (rows / n) + std::min(k, rows % n); };
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  auto run_chunk = [&](std::int64_t k) {
    try {
      body(chunk_begin(k), chunk_begin(k + 1));
    } catch (...) {
      errors[static_cast<std::size_t>(k)] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(n - 1));
  for (std::int64_t k = 1; k < n; ++k) {
    try {
      workers.emplace_back(run_chunk, k);
    } catch (const std::system_error&) {
      run_chunk(k);  // no thread to be had: the chunk runs here, the bytes are the same
    }
  }
  run_chunk(0);
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

bool kv_rows_write_disjoint_bytes(const InsertCase& c) {
  const auto format = format_of(c);
  if (!format) return false;
  const RecordLayout& l = layout_of(*format);
  const CacheGeometry& g = c.cache;
  const bool pages_apart = l.paged_regions ? g.page_stride_bytes() >= l.dense_page_bytes(g.block_size)
                                           : g.token_stride_bytes() >= l.data_bytes &&
                                                 g.page_stride_bytes() >= g.block_size * g.token_stride_bytes();
  if (!pages_apart) return false;
  std::vector<std::int64_t> slots;
  slots.reserve(static_cast<std::size_t>(c.num_inserted()));
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    if (s >= 0) slots.push_back(s);
  }
  std::sort(slots.begin(), slots.end());
  return std::adjacent_find(slots.begin(), slots.end()) == slots.end();
}

}  // namespace kvc::oracle
