// index_tails.h: slot_mapping and position_ids as views of the first M and N entries of longer
// buffers whose entries past the view are valid.
//
// A kernel that reads slot_mapping past its M entries (a loop bound of N, the kv rows, instead of
// M; a warp that handles rows in groups and does not stop at the last) reads whatever follows
// the tensor. After a buffer of the tensor's own size that is a guard zone or unmapped memory: a
// slot the kernel skips as out of range, or a fault only memcheck names. Serving code slices
// slot_mapping out of a longer per-batch buffer, and there the entries that follow are real
// slots. extend_with_index_tails() makes them so: the slot buffer goes on with
// kTailRowsPastN + (N - M) distinct slots that no row of the case addresses (free records of the
// cache), so a kernel that reads them writes whole records the oracle leaves untouched and the
// byte comparison names them as foreign slots; the position buffer goes on with kTailRowsPastN
// positions inside the cos/sin table, so a kernel reading positions past N rotates with a real
// table row instead of faulting. The views (sizes, strides, offsets) are unchanged: only the
// buffers are longer, and the oracle, which reads slots t < M and positions t < N, writes the
// same bytes as without the tails. Cost: the tail entries.
#pragma once

#include <cstdint>

#include "kvc/insert_case.h"
#include "testkit/cases/case_builder.h"

namespace kvc::testkit {

// Entries past the rows of kv a tail holds: a group of 8 rows, the widest step of our kernels.
inline constexpr std::int64_t kTailRowsPastN = 8;

// Slot-buffer entries past M that extend_with_index_tails() needs as free slots.
inline std::int64_t index_tail_slots(std::int64_t rows, std::int64_t slots) { return rows - slots + kTailRowsPastN; }

// Extends the slot and position buffers of `c` (a valid case, both at offset 0) as above, the
// tail slots drawn from `rng` among the cache's free slots. Throws std::invalid_argument when the
// cache has fewer free slots than index_tail_slots().
void extend_with_index_tails(InsertCase& c, Rng& rng);

}  // namespace kvc::testkit
