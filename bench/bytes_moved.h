// bytes_moved.h: the fewest bytes an insertion call must move through device memory.
//
// The benchmarks divide these bytes by the measured time to get an effective bandwidth, and compare
// it with a device-to-device copy of the same bytes. The count is derived from the case (shapes,
// dtypes, live slots) and the record-layout table of kvc/contract.h, never typed by hand: each
// input element the op needs is read once, each output byte the contract names is written once.
// Rows whose slot is -1 cost their slot read only (a kernel need not read their kv row).
#pragma once

#include <cstdint>

#include "kvc/insert_case.h"

namespace kvc::bench {

struct BytesMoved {
  std::int64_t kv_read = 0;           // live kv rows (and kv_norm's input rows)
  std::int64_t slots_read = 0;        // every entry of slot_mapping, live or not
  std::int64_t positions_read = 0;    // one position per live row
  std::int64_t cos_sin_read = 0;      // one cos/sin table row per live row
  std::int64_t records_written = 0;   // record bytes per live row (data + scales, pad byte included)
  std::int64_t q_read = 0;            // legacy: q_in rows the Q side processes
  std::int64_t q_written = 0;         // legacy: q_out (pad heads included), or q in place
  std::int64_t scalars_read = 0;      // fp8 scales, q_scale_inv, the kv_norm weight row
  std::int64_t norm_out_written = 0;  // standalone kv_norm: the normed rows

  std::int64_t read() const { return kv_read + slots_read + positions_read + cos_sin_read + q_read + scalars_read; }
  std::int64_t written() const { return records_written + q_written + norm_out_written; }
  std::int64_t total() const { return read() + written(); }
};

BytesMoved operator+(const BytesMoved& a, const BytesMoved& b);

// One call of the op the case describes: KV-only (with kv_norm fused in front when the case has a
// kv_norm weight) or legacy. Needs the slot values; q may be metadata only.
BytesMoved insert_bytes_moved(const InsertCase& c);

// One standalone kv_norm over `rows` bf16 rows: rows read, weight read, rows written.
BytesMoved kv_norm_bytes_moved(std::int64_t rows);

}  // namespace kvc::bench
