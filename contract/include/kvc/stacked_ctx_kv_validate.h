// stacked_ctx_kv_validate.h: the validation rules of the stacked context-KV op.
//
// Codes 140-158 (contract level: dtypes, shapes, contiguity, head geometry, devices, a forced
// stacked path on an ineligible model, stacked parameters that are not the layers' KV rows),
// 210-213 (strict: overlapping pool slots, cache_loc out of a pool, duplicate cache_loc, a
// written token's position outside a rotary table) and 310 (harness: a pool buffer that does not
// cover its view), plus the generic 129 (malformed metadata) and 303 (an input's bytes do not
// cover it). As for the insert ops (docs/contract.md §5.4), the first failing rule wins, a
// rejected call writes nothing, and the range rules 211 and 213 are enforced at the contract level
// too whenever values are available: the oracle itself would otherwise write or read out of
// bounds. A kernel wrapper validates metadata only; its kernels skip, on the device, any token
// whose cache_loc lies outside a pool or whose position lies outside a table.
#pragma once

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_ctx_kv_eligibility.h"
#include "kvc/stacked_fused_eligibility.h"
#include "kvc/stacked_profile.h"
#include "kvc/status.h"
#include "kvc/validate.h"

namespace kvc {

// `cache_loc` decides the value rules on cache_loc (docs/contract.md §6.2.1): under
// kNegativeSkipped a negative entry skips its token; under kSlotZeroReserved a 0 skips it, a
// negative entry is E159 at every level (the upstream store kernel asserts on it), and tokens at
// slot 0 are not duplicates of each other.
Status validate_stacked_ctx_kv(const StackedCtxKvCase& c, ValidationLevel level,
                               ValueAccess access = ValueAccess::kMetadataAndValues,
                               CacheLocPolicy cache_loc = CacheLocPolicy::kNegativeSkipped);

// Whether token t's cache_loc entry writes under the policy (>= 0, or >= 1 with slot 0 reserved).
inline bool writes_slot(std::int64_t loc, CacheLocPolicy policy) {
  return policy == CacheLocPolicy::kSlotZeroReserved ? loc > 0 : loc >= 0;
}

// The caller's pool buffers against the case (E310): one K and one V buffer per layer, each
// covering its pool view. Safe on an unvalidated case (malformed pool metadata: E129).
Status validate_stacked_ctx_kv_outputs(const StackedCtxKvCase& c, const StackedCtxKvOutputs& out);

// The path a request takes on a model of the given eligibilities (docs/contract.md §4.5): kAuto
// the fused path when `fused` is eligible, else the stacked path when `stacked` is, else per
// layer; kStacked or kFused on a model ineligible for it is rejected (E157, the detail names the
// path, the reason and the layer).
Status resolve_stacked_path(StackedPathRequest request, const StackedEligibility& stacked,
                            const FusedEligibility& fused, StackedPath* path);

// Codes that belong to this op's rules (the numbers the op was assigned: 140-169, 210-219,
// 310-319; 160-169 since contract version 3, when 140-159 were used up). The insert ops' rule
// matrices leave them to this op's own negative tests.
constexpr bool is_stacked_ctx_kv_code(ErrorCode code) {
  const int n = static_cast<int>(code);
  return (n >= 140 && n <= 169) || (n >= 210 && n <= 219) || (n >= 310 && n <= 319);
}

}  // namespace kvc
