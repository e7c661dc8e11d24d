// library_declarations.h: what a kernel library exports and declares, per ABI op (op_coverage.h).
//
// Read through testkit's DeclaredSupport (kvc_op_support_get) for every format (none for kv_norm
// and stacked_ctx_kv) and kv dtype (bf16, fp16) of each op: host code, no device needed. The fused
// kv_norm is its own query (KVC_OP_KV_ONLY_INSERT_KV_NORM) since ABI 1.2; a library built before
// shares the plain insert's answer. The profile listed is the one the
// supported combinations declare (its rsqrt only for the ops with a norm: legacy's q-norm, the
// fused and the standalone kv_norm); the ops without a cache format list no profile, since the
// cache policies do not concern them. The stacked op lists its stacked profile per path instead:
// op 4's for the per-layer and stacked paths, op 6's for the fused path (or why it has none).
#pragma once

#include <vector>

#include "op_coverage.h"
#include "testkit/device/kernel_library.h"

namespace kvc::runner {

std::vector<OpDeclaration> library_declarations(const testkit::KernelLibrary& library);

}  // namespace kvc::runner
