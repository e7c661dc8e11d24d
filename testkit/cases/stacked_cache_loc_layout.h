// stacked_cache_loc_layout.h: a stacked case's cache_loc in the form a cache_loc policy takes
// (docs/contract.md §6.2.1), so that a library declaring slot 0 reserved is checked on the same
// tokens, weights and slots as every other instead of on cases its policy makes invalid.
//
// The registry writes a skipped token as -1 and draws the written slots among [0, slots). Under
// kSlotZeroReserved a negative entry is E159 and slot 0 is never written, so a skipped token
// becomes 0 (the policy's skip) and a token drawn at slot 0 moves to the lowest slot >= 1 that no
// token writes and every layer's pools hold. Under kNegativeSkipped the case is unchanged. Values
// only: shapes, pools and every other byte stay as they were.
#pragma once

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"

namespace kvc::testkit {

// `c` (a case whose cache_loc values the host holds) laid out for `policy`. A slot-0 token with no
// free slot to move to keeps slot 0 (it is then skipped, as the policy says).
StackedCtxKvCase in_cache_loc_policy(const StackedCtxKvCase& c, CacheLocPolicy policy);

}  // namespace kvc::testkit
