// stacked_ctx_kv.h: the DSpark stacked context-KV projection (docs/contract.md §4.5), both paths.
//
// For every layer: the projection of x onto the layer's K and V rows (a sequential fma chain per
// element, the bias added once, one rounding to the storage dtype D), the K-norm per (token,
// head) on the stored K (sequential sum of squares, correctly rounded rsqrt, weight, one rounding
// to D), NeoX RoPE on the stored normed K (the §2.6 rounding pattern, one rounding to D), V the
// stored projection; K and V land in the layer's pools at cache_loc[t] (a negative entry writes
// nothing).
//
// The per-layer path runs this layer by layer from each layer's own tensors. The stacked path
// builds (or takes from a StackedParamCache) the stacked parameters, runs one projection over
// every layer's KV rows and one epilogue for all layers from the stacked norm weights, eps and
// table. The fused path (stacked_ctx_kv_fused.h) projects and finishes one (token, layer, kv head)
// at a time. The order of operations is the same, so all three give the same bytes; the tests
// hold them to that, byte for byte. AUTO takes the fused path when the model is eligible for it,
// else the stacked path when eligible, else per layer (docs/contract.md §4.5).
//
// With commit lengths (prefix-valid writes) a token outside its row's committed prefix writes
// nothing, whatever its cache_loc entry holds.
//
// Every token is projected (the projection is the op's GEMM, which a kernel runs over all T rows);
// only tokens whose cache_loc writes (>= 0; > 0 with slot 0 reserved) go through the epilogue.
//
// The declared policies (StackedProfile, docs/contract.md §6.2.1) choose the rope contraction, the
// K-norm's reduction order and the cache_loc rule; the default is the contract's, and a run under
// it writes the bytes the contract fixes. kUnspecified sums sequentially and kApproximate takes
// the correctly rounded r: both are the centre of the budget the judge applies, not a model of
// the library.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/oracle/stacked_ctx_kv_params.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_ctx_kv_eligibility.h"
#include "kvc/stacked_fused_eligibility.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "kvc/stacked_profile.h"
#include "kvc/status.h"

namespace kvc::oracle {

struct StackedCtxKvOptions {
  ValidationLevel level = ValidationLevel::kStrict;
  StackedPathRequest path = StackedPathRequest::kAuto;
  // Stacked path: its parameters come from this cache (built or refreshed as needed); null: they
  // are built for the call.
  StackedParamCache* cache = nullptr;
  // Stacked path: the caller's own parameters (as the kernel ABI takes them), used as given; they
  // must have the layers' shape, dtype and bias presence (E158). Takes precedence over `cache`.
  const StackedParams* params = nullptr;
  // The declared policies the bytes are computed under (the contract's by default).
  StackedProfile profile;
};

// What a run did besides writing the pools.
struct StackedCtxKvRun {
  StackedPath path = StackedPath::kPerLayer;
  StackedEligibility eligibility;
  FusedEligibility fused_eligibility;
  // The stored projection, [T, projection_width()] 16-bit values of D: layer l's K rows then its
  // V rows at column projection_column(l). The same matrix on both paths.
  std::vector<std::uint16_t> projection;
};

// Validates (then the outputs, E310), decides the path, runs it. A rejected call writes nothing.
Status stacked_ctx_kv(const StackedCtxKvCase& c, StackedCtxKvOutputs& out, const StackedCtxKvOptions& options = {},
                      StackedCtxKvRun* run = nullptr);

// The epilogue alone, on a given stored projection (a kernel's, when its GEMM sums in another
// order): K-norm, RoPE and the pool writes of every layer from the layers' own tensors. The case
// must be valid (validate_stacked_ctx_kv) and `projection` [T, projection_width()].
Status stacked_ctx_kv_epilogue(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& projection,
                               StackedCtxKvOutputs& out, const StackedProfile& profile = {});

// One projection element: the sequential fma chain over `hidden` terms, the bias (when given)
// added once, rounded to `storage`.
std::uint16_t project_element(const std::uint16_t* x_row, DType x_dtype, const std::uint16_t* w_row, DType w_dtype,
                              std::int64_t hidden, const std::uint16_t* bias, DType storage);

// K-norm and NeoX RoPE of one head: `k` holds the stored projected K (head_dim values of
// `storage`); on return it holds the stored rotated K. `weight` is the K-norm weight widened.
// The profile's rope and reduction apply (stacked_ctx_kv_k_norm.h); cache_loc does not.
void k_norm_rope_head(std::uint16_t* k, std::int64_t head_dim, const float* weight, float eps, const float* cos_sin_row,
                      DType storage, const StackedProfile& profile = {});

}  // namespace kvc::oracle
