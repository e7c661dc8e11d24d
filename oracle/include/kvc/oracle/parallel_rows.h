// parallel_rows.h: running an op's independent rows on several threads, with the same bytes.
//
// Every record (and every Q head) the ops write depends on its own row's inputs only
// (docs/contract.md §3-4), so rows can run in any order on any thread, provided no two rows write
// the same byte. parallel_rows() is a small parallel-for over [0, rows): contiguous chunks, one
// per thread, the calling thread taking the first. kv_rows_write_disjoint_bytes() says when the
// KV side may use it: distinct slots and records that cannot overlap. Otherwise (duplicate slots
// or overlapping pages, both possible at the contract level) the rows run serially in row order,
// so the last writer wins exactly as in a single-threaded run. The bytes are therefore identical
// for every thread count.
#pragma once

#include <cstdint>
#include <functional>

#include "kvc/insert_case.h"

namespace kvc::oracle {

// Environment variable that sets the oracle's thread count when OracleOptions::threads is 0.
inline constexpr const char* kOracleThreadsEnv = "KVC_ORACLE_THREADS";
// Below this many rows per thread a chunk costs less than starting a thread: run fewer threads.
inline constexpr std::int64_t kMinRowsPerThread = 256;

// `requested` when > 0; else KVC_ORACLE_THREADS when it is a positive integer; else
// std::thread::hardware_concurrency() (1 when unknown).
int resolve_oracle_threads(int requested);

// Calls body(begin, end) on disjoint contiguous chunks covering [0, rows), on at most `threads`
// threads and at most rows / min_rows_per_thread of them; returns when all are done. An exception
// thrown by a chunk is rethrown here after every thread has joined.
void parallel_rows(std::int64_t rows, int threads,
                   const std::function<void(std::int64_t begin, std::int64_t end)>& body,
                   std::int64_t min_rows_per_thread = kMinRowsPerThread);

// Whether the KV rows of a validated case write pairwise disjoint bytes: no non-negative slot
// twice, and a geometry whose records do not overlap (page stride >= the dense page; full caches
// also token stride >= the row and page stride >= block_size rows).
bool kv_rows_write_disjoint_bytes(const InsertCase& c);

}  // namespace kvc::oracle
