// stacked_ctx_kv_eligibility.cpp: eligibility of the stacked path (see stacked_ctx_kv_eligibility.h).
#include "kvc/stacked_ctx_kv_eligibility.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace kvc {
namespace {

std::string layer_text(int layer) { return "layer " + std::to_string(layer); }

std::string float_text(float v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.9g", static_cast<double>(v));
  return s;
}

const char* dtype_text(DType t) { return t == DType::kF16 ? "float16" : t == DType::kBF16 ? "bfloat16" : "other"; }

// Same shape and the same bytes over the tensors' element spans (validated tables are contiguous).
bool same_table_bytes(const HostTensor& a, const HostTensor& b) {
  if (a.meta.dtype != b.meta.dtype || a.meta.sizes != b.meta.sizes) return false;
  const std::int64_t n = a.meta.span_bytes() - a.meta.offset_bytes;
  if (n == 0) return true;
  return std::memcmp(a.bytes.data() + a.meta.offset_bytes, b.bytes.data() + b.meta.offset_bytes,
                     static_cast<std::size_t>(n)) == 0;
}

StackedEligibility ineligible(StackedIneligibility reason, int layer, std::string detail) {
  return StackedEligibility{reason, layer, layer_text(layer) + ": " + std::move(detail)};
}

}  // namespace

const char* ineligibility_name(StackedIneligibility r) {
  switch (r) {
    case StackedIneligibility::kNone: return "eligible";
    case StackedIneligibility::kQuantizedLayer: return "quantized layer";
    case StackedIneligibility::kEpsDiffers: return "eps differs";
    case StackedIneligibility::kBiasOnSomeLayers: return "bias on some layers only";
    case StackedIneligibility::kHeadDimDiffers: return "head_dim differs";
    case StackedIneligibility::kKvHeadsDiffers: return "kv heads differ";
    case StackedIneligibility::kDtypeDiffers: return "dtype differs";
    case StackedIneligibility::kRotaryTableDiffers: return "rotary table differs";
  }
  return "unknown";
}

std::string StackedEligibility::to_string() const {
  if (eligible()) return "eligible";
  return std::string(ineligibility_name(reason)) + " at " + detail;
}

StackedEligibility stacked_ctx_kv_eligibility(const StackedCtxKvCase& c, const RotaryTableEquality& tables_equal) {
  if (c.layers.empty()) return {};
  const StackedCtxKvLayer& first = c.layers.front();
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    if (l.quantized) return ineligible(StackedIneligibility::kQuantizedLayer, i, "its QKV weight is quantized");
    if (i == 0) continue;
    // Exact float equality, as the original's `eps not in (None, eps0)`.
    if (l.eps != first.eps)
      return ineligible(StackedIneligibility::kEpsDiffers, i,
                        "eps " + float_text(l.eps) + " vs layer 0's " + float_text(first.eps));
    if (l.head_dim != first.head_dim)
      return ineligible(StackedIneligibility::kHeadDimDiffers, i,
                        "head_dim " + std::to_string(l.head_dim) + " vs layer 0's " + std::to_string(first.head_dim));
    if (l.num_kv_heads != first.num_kv_heads)
      return ineligible(
          StackedIneligibility::kKvHeadsDiffers, i,
          std::to_string(l.num_kv_heads) + " kv heads vs layer 0's " + std::to_string(first.num_kv_heads));
    if (l.dtype() != first.dtype())
      return ineligible(StackedIneligibility::kDtypeDiffers, i,
                        std::string(dtype_text(l.dtype())) + " weights vs layer 0's " + dtype_text(first.dtype()));
    const bool same_table = tables_equal ? tables_equal(i) : same_table_bytes(l.cos_sin, first.cos_sin);
    if (!same_table)
      return ineligible(StackedIneligibility::kRotaryTableDiffers, i,
                        tables_equal ? "its rotary table is another tensor than layer 0's"
                                     : "its rotary table differs from layer 0's");
  }
  // Bias presence is judged after the walk: all layers or none.
  for (int i = 1; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    if (l.has_bias() != first.has_bias())
      return ineligible(StackedIneligibility::kBiasOnSomeLayers, i,
                        std::string(l.has_bias() ? "has a bias" : "has no bias") + ", layer 0 " +
                            (first.has_bias() ? "has one" : "has none"));
  }
  return {};
}

}  // namespace kvc
