// expected_bytes.h: what an insert writes, computed with torch tensor operations.
//
// docs/contract.md §3 and §4 applied to whole batches: the live KV rows (t < M, slot >= 0) are
// widened, normed when a kv_norm weight is present (§4.4), rotated (§2.6), rounded through 16
// bits for the packed formats (§3.2), encoded into records (§3.3 to §3.6) and scattered into a
// canary-filled backing; the legacy op's Q side (§4.2, §4.3) is computed for every token and
// head. Only tensor operations decide the values; plain C++ only moves bytes in and out.
#pragma once

#include <cstdint>

#include "generated_case.h"

namespace kvc::golden_generator {

// Throws std::runtime_error when the case is one the generator does not model (it only builds
// valid cases) or when two records would land on the same bytes.
GenExpected compute_expected(const GenCase& c, std::uint8_t canary);

}  // namespace kvc::golden_generator
