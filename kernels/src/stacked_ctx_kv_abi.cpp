// stacked_ctx_kv_abi.cpp: the optional ABI entry point kvc_stacked_ctx_kv over our kernels.
//
// As for the insert ops (kernel_abi.cpp): the call is checked and described as a StackedCtxKvCase
// by the ABI's shared front-end (kvc/abi/stacked_ctx_kv_call.h: a malformed call ->
// KVC_STATUS_BAD_ARGUMENT, a broken rule of the contract at the strict level, metadata only -> the
// rule's code); the path is decided by the contract's eligibilities (stacked and fused), with the
// rotary tables compared by identity (the same tensor), since the wrapper reads no values: AUTO
// takes the fused path when eligible, else the stacked path when eligible and stacked parameters
// are given, else per layer; a forced path on a model ineligible for it is E157. The stacked
// weight must be the layers' KV rows' shape (E158); then the launch. The fused path has only the
// exact order: KVC_GEMM_ANY_ORDER on it runs the exact order (docs/contract.md §4.5). Values
// (cache_loc, positions) are not read on the host: the kernels skip out-of-range ones on the
// device. Nothing is launched for a rejected call or one with no tokens. No exception crosses the
// boundary.
//
// The entry point runs the contract's stacked profile, the one our library declares. The test hook
// (kvc/kernels/stacked_ctx_kv_test_hook.h) runs the same call under any other; with slot 0 reserved
// it reads cache_loc on the host (a copy and a synchronisation) to reject a negative entry (E159).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "device_scope.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/outcome.h"
#include "kvc/abi/capabilities.h"
#include "kvc/abi/stacked_ctx_kv_call.h"
#include "kvc/abi/stacked_policies.h"
#include "kvc/kernel_abi.h"
#include "kvc/kernels/stacked_ctx_kv.h"
#include "kvc/kernels/stacked_ctx_kv_test_hook.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "kvc/stacked_fused_eligibility.h"

namespace kvc::kernels::abi_wrapper {
namespace {

using abi::first_element;
using abi::Outcome;
using abi::tensor_meta;

bool same_tensor(const DLTensor* a, const DLTensor* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr || first_element(*a) != first_element(*b) || a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; ++d)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

// The stacked weight and bias of the stacked path: the layers' KV rows' shape and dtype (E158).
Status check_stacked_params(const kvc_stacked_ctx_kv_args& a, const StackedCtxKvCase& c) {
  if (a.stacked_weight == nullptr) return Error(ErrorCode::kStackedParamsMismatch, "no stacked_weight was given");
  const TensorMeta w = tensor_meta(*a.stacked_weight, DType::kF32);
  const std::int64_t rows = c.projection_width();
  const DType dtype = c.layers.front().dtype();
  if (!w.well_formed() || w.dtype != dtype || w.rank() != 2 || w.size(0) != rows || w.size(1) != c.hidden() ||
      !w.contiguous() || w.device != c.x.meta.device)
    return Error(ErrorCode::kStackedParamsMismatch, "stacked_weight must be contiguous [" + std::to_string(rows) +
                                                        ", " + std::to_string(c.hidden()) + "] of the layers' dtype");
  const bool bias = c.layers.front().has_bias();
  if ((a.stacked_bias != nullptr) != bias)
    return Error(ErrorCode::kStackedParamsMismatch, bias ? "the layers have biases but no stacked_bias was given"
                                                         : "stacked_bias given for layers without bias");
  if (bias) {
    const TensorMeta b = tensor_meta(*a.stacked_bias, DType::kF32);
    if (!b.well_formed() || b.dtype != dtype || b.rank() != 1 || b.size(0) != rows || !b.contiguous() ||
        b.device != c.x.meta.device)
      return Error(ErrorCode::kStackedParamsMismatch, "stacked_bias must be contiguous [" + std::to_string(rows) + "]");
  }
  return Status::Ok();
}

std::string projection_defect(const DLTensor& p, const StackedCtxKvCase& c) {
  const TensorMeta m = tensor_meta(p, DType::kF32);
  if (!m.well_formed() || m.dtype != c.storage_dtype() || m.rank() != 2 || m.size(0) != c.num_tokens() ||
      m.size(1) != c.projection_width() || !m.contiguous() || m.device != c.x.meta.device || m.offset_bytes % 2 != 0)
    return "projection must be contiguous [" + std::to_string(c.num_tokens()) + ", " +
           std::to_string(c.projection_width()) + "] of x's dtype on x's device";
  return {};
}

StackedLayerDevice device_layer(const kvc_stacked_ctx_kv_layer& in, const StackedCtxKvLayer& l, std::int64_t hidden) {
  StackedLayerDevice d;
  d.kv_weight = static_cast<const std::uint16_t*>(first_element(*in.qkv_weight)) + l.q_size * hidden;
  d.kv_bias =
      in.qkv_bias != nullptr ? static_cast<const std::uint16_t*>(first_element(*in.qkv_bias)) + l.q_size : nullptr;
  d.weight_fp16 = l.dtype() == DType::kF16;
  d.k_norm_weight = static_cast<const std::uint16_t*>(first_element(*in.k_norm_weight));
  d.cos_sin = static_cast<const float*>(first_element(*in.cos_sin_cache));
  d.max_pos = l.cos_sin.meta.size(0);
  d.k_pool = static_cast<std::uint16_t*>(first_element(*in.k_pool));
  d.v_pool = static_cast<std::uint16_t*>(first_element(*in.v_pool));
  d.k_slot_stride = l.k_pool.stride(0);
  d.v_slot_stride = l.v_pool.stride(0);
  d.k_slots = l.k_pool.size(0);
  d.v_slots = l.v_pool.size(0);
  d.num_kv_heads = l.num_kv_heads;
  d.head_dim = l.head_dim;
  d.eps = l.eps;
  return d;
}

using detail::DeviceScope;

// E159 under slot 0 reserved: the call's cache_loc read on the host (docs/contract.md §5.5). Costs
// a device-to-host copy and a synchronisation of the stream: test hook only.
Outcome negative_cache_loc(const StackedCtxKvCase& c, const DLTensor& cache_loc, cudaStream_t stream) {
  const std::int64_t tokens = c.num_tokens();
  if (tokens == 0) return {};
  DeviceScope scope;
  if (cudaError_t e = scope.enter(c.x.meta.device); e != cudaSuccess)
    return Outcome{KVC_STATUS_CUDA_ERROR, std::string("selecting the tensors' device: ") + cudaGetErrorString(e)};
  std::vector<std::int64_t> loc(static_cast<std::size_t>(tokens));
  cudaError_t e = cudaMemcpyAsync(loc.data(), first_element(cache_loc), loc.size() * sizeof(std::int64_t),
                                  cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess)
    return Outcome{KVC_STATUS_CUDA_ERROR, std::string("reading cache_loc: ") + cudaGetErrorString(e)};
  for (std::int64_t t = 0; t < tokens; ++t)
    if (loc[static_cast<std::size_t>(t)] < 0)
      return abi::rejected(
          Error(ErrorCode::kStackedNegativeCacheLoc, "cache_loc " + std::to_string(loc[static_cast<std::size_t>(t)]) +
                                                         " at token " + std::to_string(t) + " (slot 0 is reserved)"));
  return {};
}

Outcome stacked_ctx_kv(const kvc_stacked_ctx_kv_args* a, void* stream, const StackedProfile& profile) {
  StackedCtxKvCase c;
  if (Outcome o = abi::check_stacked_ctx_kv(a, &c); !o.ok()) return o;
  if (profile.cache_loc == CacheLocPolicy::kSlotZeroReserved)
    if (Outcome o = negative_cache_loc(c, *a->cache_loc, static_cast<cudaStream_t>(stream)); !o.ok()) return o;
  const RotaryTableEquality same_table = [&](int layer) {
    return same_tensor(a->layers[layer].cos_sin_cache, a->layers[0].cos_sin_cache);
  };
  const StackedEligibility eligibility = stacked_ctx_kv_eligibility(c, same_table);
  const FusedEligibility fused = stacked_fused_eligibility(c, same_table);
  const StackedPathRequest request = *abi::stacked_path_request_of(a->path);  // checked above
  StackedPath path = StackedPath::kPerLayer;
  if (request == StackedPathRequest::kAuto && a->stacked_weight == nullptr) {
    // AUTO without stacked parameters cannot take the stacked path; the fused path reads every
    // layer's own weight and needs none.
    path = fused.eligible() ? StackedPath::kFused : StackedPath::kPerLayer;
  } else if (Status s = resolve_stacked_path(request, eligibility, fused, &path); !s.ok()) {
    return abi::rejected(s);
  }
  if (path == StackedPath::kStacked)
    if (Status s = check_stacked_params(*a, c); !s.ok()) return abi::rejected(s);
  if (a->projection != nullptr)
    if (std::string d = projection_defect(*a->projection, c); !d.empty()) return abi::bad_argument(d);
  // The fused path has one order, the exact one: asked for any order it runs that (a result
  // within every budget), so only the other paths need x and the weights in one dtype.
  if (a->gemm == KVC_GEMM_ANY_ORDER && path != StackedPath::kFused)
    for (const StackedCtxKvLayer& l : c.layers)
      if (l.dtype() != c.storage_dtype())
        return Outcome{KVC_STATUS_UNSUPPORTED, "the cuBLAS projection needs x and every layer's weights in one dtype"};

  StackedCtxKvParams p;
  p.x = static_cast<const std::uint16_t*>(first_element(*a->x));
  p.x_fp16 = c.storage_dtype() == DType::kF16;
  p.tokens = c.num_tokens();
  p.hidden = c.hidden();
  p.positions = static_cast<const std::int64_t*>(first_element(*a->positions));
  p.cache_loc = static_cast<const std::int64_t*>(first_element(*a->cache_loc));
  if (const DLTensor* lens = abi::stacked_commit_lens(*a)) {
    p.commit_lens = static_cast<const std::int64_t*>(first_element(*lens));
    p.commit_row_length = c.commit_row_length();
  }
  p.num_layers = c.num_layers();
  for (int i = 0; i < c.num_layers(); ++i)
    p.layers[i] = device_layer(a->layers[i], c.layers[static_cast<std::size_t>(i)], p.hidden);
  p.path = path;
  p.gemm = a->gemm == KVC_GEMM_ANY_ORDER ? ProjectionGemm::kCublas : ProjectionGemm::kExactOrder;
  p.profile = profile;
  if (path == StackedPath::kStacked) {
    p.stacked_weight = static_cast<const std::uint16_t*>(first_element(*a->stacked_weight));
    p.stacked_bias =
        a->stacked_bias != nullptr ? static_cast<const std::uint16_t*>(first_element(*a->stacked_bias)) : nullptr;
  }
  if (a->projection != nullptr) p.projection = static_cast<std::uint16_t*>(first_element(*a->projection));
  if (a->path_taken != nullptr) *a->path_taken = abi::abi_stacked_path(path);
  if (p.tokens == 0) return {};

  DeviceScope scope;
  if (cudaError_t e = scope.enter(c.x.meta.device); e != cudaSuccess)
    return Outcome{KVC_STATUS_CUDA_ERROR, std::string("selecting the tensors' device: ") + cudaGetErrorString(e)};
  const LaunchStatus s = kvc::kernels::stacked_ctx_kv(p, static_cast<cudaStream_t>(stream));
  switch (s.kind) {
    case LaunchStatus::Kind::kOk: return {};
    case LaunchStatus::Kind::kUnsupported: return Outcome{KVC_STATUS_UNSUPPORTED, s.message};
    case LaunchStatus::Kind::kCudaError: break;
  }
  return Outcome{KVC_STATUS_CUDA_ERROR, s.message};
}

}  // namespace
}  // namespace kvc::kernels::abi_wrapper

extern "C" KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* args, void* stream, char* error,
                                                 size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] {
    return kvc::kernels::abi_wrapper::stacked_ctx_kv(args, stream, kvc::contract_stacked_profile());
  });
}

extern "C" KVC_ABI_EXPORT int kvc_test_stacked_ctx_kv_with_policies(const kvc_stacked_ctx_kv_args* args, void* stream,
                                                                    int32_t stacked_rope, int32_t k_norm_reduction,
                                                                    int32_t k_norm_reciprocal, int32_t cache_loc,
                                                                    char* error, size_t error_capacity) {
  return kvc::abi::answer(error, error_capacity, [&] {
    // The four numbers decoded as a declaration's are (one decoder: kvc/abi/stacked_policies.h).
    kvc_op_support policies{};
    policies.struct_size = sizeof policies;
    policies.stacked_rope = stacked_rope;
    policies.k_norm_reduction = k_norm_reduction;
    policies.k_norm_reciprocal = k_norm_reciprocal;
    policies.cache_loc = cache_loc;
    kvc::StackedProfile profile;
    try {
      profile = kvc::abi::read_stacked_profile(policies, KVC_KERNEL_ABI_VERSION);
    } catch (const kvc::abi::CapabilityError& e) {
      return kvc::abi::bad_argument(e.what());
    }
    return kvc::kernels::abi_wrapper::stacked_ctx_kv(args, stream, profile);
  });
}
