// stacked_ctx_kv_fused.h: the stacked op's fused path (internal to kvc::kernels; see
// stacked_ctx_kv_fused.cu and docs/contract.md §4.5).
#pragma once

#include <cuda_runtime_api.h>

#include "kvc/kernels/stacked_ctx_kv.h"

namespace kvc::kernels::detail {

// Enqueues the fused kernel for every (token, layer, kv head) of `p` (p.path is kFused; the
// caller checked the model's fused eligibility: one eps and one table, layer 0's are used).
cudaError_t launch_stacked_fused(const StackedCtxKvParams& p, cudaStream_t stream);

}  // namespace kvc::kernels::detail
