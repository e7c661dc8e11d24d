// resolved_case.h: an insert case resolved once: its record format, layout, widths, live rows and
// legacy Q output layout, derived and checked in one place.
//
// format_of() says which format a cache dtype selects and has no answer for a dtype no format
// uses; code that re-derived it and dereferenced the answer unchecked was undefined on such a
// case. resolve() derives everything the harness keeps asking of a case from that one checked
// answer; resolve_or_throw() is the form for code that only ever sees cases of a format (a
// generated or validated case) and wants a clear error, not undefined behaviour, when it does not.
//
// Resolving reads the slots once (the live-row count), so resolve a case once per pass over it,
// not once per row.
#pragma once

#include <cstdint>
#include <optional>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc {

// How the legacy op lays out its Q output (docs/contract.md §4): packed formats write q_out
// [N, Hp, 512] of q's dtype (head-major, or chunk-interleaved with q_interleaved; Hp = 0: none);
// bf16_512 rewrites q in place [N, H, 512] bf16; fp8_512 writes q_fp8 [N, H, 512] e4m3.
enum class QOutKind : std::uint8_t {
  kNone = 0,     // KV-only op: no Q output
  kPadded = 1,   // packed formats: [N, Hp, 512], q's 16-bit dtype
  kInPlace = 2,  // bf16_512: q itself, [N, H, 512] bf16
  kFp8 = 3,      // fp8_512: q_fp8 [N, H, 512] e4m3
};

struct QOutLayout {
  QOutKind kind = QOutKind::kNone;
  std::int64_t tokens = 0;        // N: rows of the op
  std::int64_t q_heads = 0;       // H: heads of q (those computed; the rest of Hp are zeros)
  std::int64_t heads = 0;         // heads per token in the output: Hp (packed) or H; 0: no Q output
  int element_bytes = 0;          // 2 (bf16/f16) or 1 (e4m3)
  bool interleaved = false;       // chunk-interleaved (packed path with q_interleaved)
  std::int64_t offset_bytes = 0;  // where element 0 sits in the output buffer

  std::int64_t bytes_per_head() const { return std::int64_t{kHeadDim} * element_bytes; }
  std::int64_t elements() const { return tokens * heads * kHeadDim; }
};

struct ResolvedInsertCase {
  RecordFormat format;
  const RecordLayout& layout;
  int kv_element_bytes = 0;    // width of one kv (and q) element: 2 for bf16 and f16
  std::int64_t rows = 0;       // N
  std::int64_t inserted = 0;   // M: the rows that have a slot (rows >= M are never written)
  std::int64_t live_rows = 0;  // rows t < M whose slot is >= 0 (the rest are skipped)
  QOutLayout q_out;

  bool packed() const { return layout.paged_regions; }
};

// The Q output layout of a case of `format` (what resolve() puts in q_out): for code that already
// holds the format of a validated case, e.g. the oracle's per-head stores.
QOutLayout q_out_layout(const InsertCase& c, RecordFormat format);

// Nothing when the cache dtype selects no record format. Never reads past a tensor's bytes: a
// slot the slot tensor's bytes do not hold is not counted live.
std::optional<ResolvedInsertCase> resolve(const InsertCase& c);
// The same, or std::invalid_argument naming the cache dtype that selects no format.
ResolvedInsertCase resolve_or_throw(const InsertCase& c);

}  // namespace kvc
