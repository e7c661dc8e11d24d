// stacked_ctx_kv_fused.h: the stacked context-KV op's fused path in the oracle (docs/contract.md
// §4.5, version 3).
//
// The fused path organises the op per (token, layer, kv head): that head's K and V projection
// rows are computed from the layer's own weight (the contract's sequential fma chain per element,
// the same project_element the other paths use) and the epilogue runs on them at once, writing
// the pools; nothing is shared between heads. It is the order the project's fused kernel follows
// (kernels/src/stacked_ctx_kv_fused.cu), written the same way here so that the two read alike.
// The eligible models (stacked_fused_eligibility.h) have one eps and one rotary table: the path
// takes layer 0's, as the dispatch it models does; every layer keeps its own K-norm weight.
//
// Every token is projected into `projection` (the kernel stores it only when asked, but a caller
// that asks gets every token's); only committed tokens whose cache_loc writes under the profile
// reach the pools. Under one profile the bytes are the per-layer and stacked paths' exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"

namespace kvc::oracle {

// Runs the fused path on a validated, fused-eligible case: `projection` [T, projection_width()]
// and the pools of `out` are written.
void run_stacked_fused(const StackedCtxKvCase& c, const StackedProfile& profile, std::vector<std::uint16_t>& projection,
                       StackedCtxKvOutputs& out);

}  // namespace kvc::oracle
