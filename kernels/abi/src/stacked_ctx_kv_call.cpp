// stacked_ctx_kv_call.cpp: a stacked context-KV call checked and described (see
// stacked_ctx_kv_call.h).
#include "kvc/abi/stacked_ctx_kv_call.h"

#include <string>
#include <utility>

#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/struct_size.h"
#include "kvc/abi/structural_defect.h"
#include "kvc/stacked_ctx_kv_validate.h"

namespace kvc::abi {
namespace {

std::string layer_name(int i, const char* tensor) { return "layer " + std::to_string(i) + " " + tensor; }

// Every tensor the call names, in order; the optional ones when present.
std::string structural_defects(const kvc_stacked_ctx_kv_args& a) {
  if (std::string d = first_structural_defect({{a.x, "x"}, {a.positions, "positions"}, {a.cache_loc, "cache_loc"}});
      !d.empty())
    return d;
  for (int i = 0; i < a.num_layers; ++i) {
    const kvc_stacked_ctx_kv_layer& l = a.layers[i];
    for (const auto& [t, name] : {std::pair<const DLTensor*, const char*>{l.qkv_weight, "qkv_weight"},
                                  {l.k_norm_weight, "k_norm_weight"},
                                  {l.cos_sin_cache, "cos_sin_cache"},
                                  {l.k_pool, "k_pool"},
                                  {l.v_pool, "v_pool"}})
      if (std::string d = structural_defect(t, layer_name(i, name)); !d.empty()) return d;
    if (l.qkv_bias != nullptr)
      if (std::string d = structural_defect(l.qkv_bias, layer_name(i, "qkv_bias")); !d.empty()) return d;
  }
  return first_structural_defect({{a.stacked_weight, "stacked_weight", Presence::kOptional},
                                  {a.stacked_bias, "stacked_bias", Presence::kOptional},
                                  {a.projection, "projection", Presence::kOptional},
                                  {stacked_commit_lens(a), "commit_lens", Presence::kOptional}});
}

// The call's metadata as the contract's case. A dtype the contract does not know becomes one that
// the tensor's own rule rejects.
void describe(const kvc_stacked_ctx_kv_args& a, StackedCtxKvCase& c) {
  c = StackedCtxKvCase{};
  c.x = metadata_tensor(*a.x, DType::kF32);                                                                // -> E140
  c.positions = metadata_tensor(*a.positions, DType::kF32);                                                // -> E150
  c.cache_loc = metadata_tensor(*a.cache_loc, DType::kF32);                                                // -> E151
  if (const DLTensor* lens = stacked_commit_lens(a)) c.commit_lens = metadata_tensor(*lens, DType::kF32);  // -> E160
  for (int i = 0; i < a.num_layers; ++i) {
    const kvc_stacked_ctx_kv_layer& in = a.layers[i];
    StackedCtxKvLayer l;
    l.qkv_weight = metadata_tensor(*in.qkv_weight, DType::kF32);                          // -> E144
    if (in.qkv_bias != nullptr) l.qkv_bias = metadata_tensor(*in.qkv_bias, DType::kF32);  // -> E147
    l.k_norm_weight = metadata_tensor(*in.k_norm_weight, DType::kF32);                    // -> E148
    l.cos_sin = metadata_tensor(*in.cos_sin_cache, DType::kI64);                          // -> E152
    l.k_pool = tensor_meta(*in.k_pool, DType::kF32);                                      // -> E153
    l.v_pool = tensor_meta(*in.v_pool, DType::kF32);
    l.q_size = in.q_size;
    l.num_kv_heads = in.num_kv_heads;
    l.head_dim = in.head_dim;
    l.eps = in.eps;
    l.quantized = in.quantized != 0;
    c.layers.push_back(std::move(l));
  }
}

}  // namespace

const DLTensor* stacked_commit_lens(const kvc_stacked_ctx_kv_args& a) {
  return a.struct_size >= KVC_ABI_END_OF(kvc_stacked_ctx_kv_args, commit_lens) ? a.commit_lens : nullptr;
}

Outcome check_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* a, StackedCtxKvCase* c) {
  if (std::string d = args_defect(a, KVC_ABI_END_OF(kvc_stacked_ctx_kv_args, path_taken), "kvc_stacked_ctx_kv_args");
      !d.empty())
    return bad_argument(d);
  if (std::string d =
          struct_size_defect("layer_struct_size", a->layer_struct_size,
                             KVC_ABI_END_OF(kvc_stacked_ctx_kv_layer, quantized), "kvc_stacked_ctx_kv_layer");
      !d.empty())
    return bad_argument(d);
  // The layers are an array: a caller's entry of another size cannot be walked.
  if (a->layer_struct_size != sizeof(kvc_stacked_ctx_kv_layer))
    return bad_argument("layer_struct_size " + std::to_string(a->layer_struct_size) +
                        ": this library's layer entry is " + std::to_string(sizeof(kvc_stacked_ctx_kv_layer)) +
                        " bytes");
  if (a->num_layers > 0 && a->layers == nullptr) return bad_argument("layers is NULL");
  if (!stacked_path_request_of(a->path))
    return bad_argument("path " + std::to_string(a->path) + " is no kvc_stacked_path");
  if (a->gemm != KVC_GEMM_EXACT_ORDER && a->gemm != KVC_GEMM_ANY_ORDER)
    return bad_argument("gemm " + std::to_string(a->gemm) + " is no kvc_projection_gemm");
  if (std::string d = structural_defects(*a); !d.empty()) return bad_argument(d);

  describe(*a, *c);
  if (Status s = validate_stacked_ctx_kv(*c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok())
    return rejected(s);
  return {};
}

}  // namespace kvc::abi
