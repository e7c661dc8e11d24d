// stacked_policy.cpp: kernel libraries whose stacked context-KV op follows another stacked profile
// than the contract's (docs/contract.md §6.2.1), around our kernels (forward_to_ours.h).
//
// Every entry point is ours; kvc_stacked_ctx_kv runs our kernels under the profile
// KVC_DOUBLE_RUNS through our test-only hook (kvc/kernels/stacked_ctx_kv_test_hook.h: the same
// epilogue with another rope contraction, lane tree, approximate reciprocal or reserved slot 0),
// and kvc_op_support_get declares KVC_DOUBLE_DECLARES for op 4 (the per-layer and stacked paths)
// and op 6 (the fused path, supported where ours is: the hook runs every path under the profile). Built per policy
// (testkit/doubles/CMakeLists.txt), each twice: declaring what it runs (it must pass every stacked check) and declaring
// the contract
// (`..._as_contract`: the same bytes, mislabelled; it must fail the policy-sensitive checks, as
// the oracle_behind_abi_vllm double does for the record profiles).
//
// KVC_DOUBLE_IGNORES_LAYER_SHAPES builds the eligibility hole of issue 25 instead: a library whose
// stacked-path check compares quantization, eps and bias presence but not head_dim, kv heads or
// dtype, and uses layer 0's for every layer. On such a model it takes the stacked path whenever
// the call asks for AUTO or the stacked path, reports path_taken = stacked, and writes each layer
// with layer 0's weight dtype (its weight, bias and K-norm weight read as layer 0's dtype). A layer
// of another head_dim or kv head count keeps its own shape: layer 0's would write past its pool,
// which the guard zones would report as damage before the judge could name the hole. The judge
// must fail it on the path it reports ("took the stacked path on a model ineligible for it").
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/include/kvc/kernels/stacked_ctx_kv_test_hook.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/stacked_policies.h"
#include "kvc/abi/struct_size.h"
#include "kvc/kernel_abi.h"
#include "kvc/stacked_profile.h"
#include "testkit/doubles/forward_to_ours.h"

#ifndef KVC_DOUBLE_NAME
#error "stacked_policy.cpp needs KVC_DOUBLE_NAME"
#endif
#ifndef KVC_DOUBLE_RUNS
#define KVC_DOUBLE_RUNS "contract"
#endif
#ifndef KVC_DOUBLE_DECLARES
#define KVC_DOUBLE_DECLARES KVC_DOUBLE_RUNS
#endif
#ifndef KVC_DOUBLE_IGNORES_LAYER_SHAPES
#define KVC_DOUBLE_IGNORES_LAYER_SHAPES 0
#endif

namespace {

// A spec this build cannot read is a build mistake of the double: say so and stop.
kvc::StackedProfile profile_of(const char* spec) {
  std::string error;
  const std::optional<kvc::StackedProfile> p = kvc::parse_stacked_profile(spec, &error);
  if (!p) {
    std::fprintf(stderr, "test double %s: stacked profile '%s': %s\n", KVC_DOUBLE_NAME, spec, error.c_str());
    std::abort();
  }
  return *p;
}

const kvc::StackedProfile& runs() {
  static const kvc::StackedProfile p = profile_of(KVC_DOUBLE_RUNS);
  return p;
}

const kvc::StackedProfile& declares() {
  static const kvc::StackedProfile p = profile_of(KVC_DOUBLE_DECLARES);
  return p;
}

using Hook = decltype(&::kvc_test_stacked_ctx_kv_with_policies);

// Our library's test hook, looked up in the handle forward_to_ours.h opened.
Hook hook() {
  static const Hook h = [] {
    (void)kvc::doubles::ours();  // loads our library first
    void* handle = dlopen(KVC_DOUBLE_OURS, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    Hook found = handle != nullptr ? reinterpret_cast<Hook>(dlsym(handle, KVC_TEST_STACKED_HOOK_SYMBOL)) : nullptr;
    if (found == nullptr) {
      std::fprintf(stderr, "test double %s: %s has no %s\n", KVC_DOUBLE_NAME, KVC_DOUBLE_OURS,
                   KVC_TEST_STACKED_HOOK_SYMBOL);
      std::abort();
    }
    return found;
  }();
  return h;
}

int run_under(const kvc::StackedProfile& p, const kvc_stacked_ctx_kv_args* args, void* stream, char* error,
              size_t capacity) {
  return hook()(args, stream, kvc::abi::abi_policy(p.rope), kvc::abi::abi_policy(p.reduction),
                kvc::abi::abi_policy(p.reciprocal), kvc::abi::abi_policy(p.cache_loc), error, capacity);
}

#if KVC_DOUBLE_IGNORES_LAYER_SHAPES
bool same_dtype(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

// The double's own eligibility: every layer unquantized, one eps, the bias on all or none; and
// whether the contract's (which also compares head_dim, kv heads and dtype) says otherwise.
bool takes_the_hole(const kvc_stacked_ctx_kv_args& a) {
  if (a.layers == nullptr || a.num_layers < 2 || a.layer_struct_size != sizeof(kvc_stacked_ctx_kv_layer)) return false;
  const kvc_stacked_ctx_kv_layer& first = a.layers[0];
  bool shapes_differ = false;
  for (int32_t i = 0; i < a.num_layers; ++i) {
    const kvc_stacked_ctx_kv_layer& l = a.layers[i];
    if (l.quantized != 0 || l.eps != first.eps || (l.qkv_bias == nullptr) != (first.qkv_bias == nullptr) ||
        l.qkv_weight == nullptr || first.qkv_weight == nullptr)
      return false;
    shapes_differ = shapes_differ || l.head_dim != first.head_dim || l.num_kv_heads != first.num_kv_heads ||
                    !same_dtype(l.qkv_weight->dtype, first.qkv_weight->dtype);
  }
  return shapes_differ;
}
#endif

}  // namespace

extern "C" {

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {
  const int rc = kvc::doubles::ours().kvc_library_info_get(out);
  if (rc == KVC_STATUS_OK) out->name = KVC_DOUBLE_NAME " (test double over kvconform-kernels)";
  return rc;
}

KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {
  const int rc = kvc::doubles::ours().kvc_op_support_get(op, format, kv_dtype, out);
  if (rc == KVC_STATUS_OK && (op == KVC_OP_STACKED_CTX_KV || op == KVC_OP_STACKED_CTX_KV_FUSED))
    kvc::abi::declare_stacked_policies(declares(), out);
  return rc;
}

KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* args, void* stream, char* error,
                                      size_t error_capacity) {
#if KVC_DOUBLE_IGNORES_LAYER_SHAPES
  if (args != nullptr && args->struct_size >= sizeof(kvc_stacked_ctx_kv_args) &&
      (args->path == KVC_STACKED_PATH_AUTO || args->path == KVC_STACKED_PATH_STACKED) && takes_the_hole(*args)) {
    // Layer 0's dtype for every layer: each layer's tensors relabelled, then run (our per-layer
    // kernels: the hole's stacked weight would be the same rows), reported as the stacked path.
    std::vector<kvc_stacked_ctx_kv_layer> layers(args->layers, args->layers + args->num_layers);
    std::vector<DLTensor> relabelled(3 * layers.size());
    const DLDataType dtype0 = args->layers[0].qkv_weight->dtype;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const DLTensor** tensors[] = {&layers[i].qkv_weight, &layers[i].qkv_bias, &layers[i].k_norm_weight};
      for (std::size_t k = 0; k < 3; ++k) {
        if (*tensors[k] == nullptr) continue;
        relabelled[3 * i + k] = **tensors[k];
        relabelled[3 * i + k].dtype = dtype0;
        *tensors[k] = &relabelled[3 * i + k];
      }
    }
    kvc_stacked_ctx_kv_args a = *args;
    a.layers = layers.data();
    a.path = KVC_STACKED_PATH_PER_LAYER;
    a.stacked_weight = nullptr;
    a.stacked_bias = nullptr;
    const int rc = run_under(runs(), &a, stream, error, error_capacity);
    if (rc == KVC_STATUS_OK && args->path_taken != nullptr) *args->path_taken = KVC_STACKED_PATH_STACKED;
    return rc;
  }
#endif
  return run_under(runs(), args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity) {
  return kvc::doubles::ours().kvc_kv_only_insert(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::doubles::ours().kvc_legacy_insert(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {
  return kvc::doubles::ours().kvc_kv_norm(args, stream, error, error_capacity);
}

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity) {
  return kvc::doubles::ours().kvc_store_rotated(args, stream, error, error_capacity);
}

}  // extern "C"
