// stacked_fused_eligibility.cpp: eligibility of the fused path (see stacked_fused_eligibility.h).
#include "kvc/stacked_fused_eligibility.h"

#include <cstdio>
#include <cstring>

namespace kvc {
namespace {

std::string float_text(float v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.9g", static_cast<double>(v));
  return s;
}

// Same shape and the same bytes over the tensors' element spans (validated tables are contiguous).
bool same_table_bytes(const HostTensor& a, const HostTensor& b) {
  if (a.meta.dtype != b.meta.dtype || a.meta.sizes != b.meta.sizes) return false;
  const std::int64_t n = a.meta.span_bytes() - a.meta.offset_bytes;
  if (n == 0) return true;
  return std::memcmp(a.bytes.data() + a.meta.offset_bytes, b.bytes.data() + b.meta.offset_bytes,
                     static_cast<std::size_t>(n)) == 0;
}

FusedEligibility ineligible(FusedIneligibility reason, int layer, const std::string& detail) {
  return FusedEligibility{reason, layer, "layer " + std::to_string(layer) + ": " + detail};
}

}  // namespace

const char* fused_ineligibility_name(FusedIneligibility r) {
  switch (r) {
    case FusedIneligibility::kNone: return "eligible";
    case FusedIneligibility::kQuantizedLayer: return "quantized layer";
    case FusedIneligibility::kWeightNotBf16: return "weights not bf16";
    case FusedIneligibility::kPoolsNotBf16: return "pools not bf16";
    case FusedIneligibility::kBias: return "bias";
    case FusedIneligibility::kHeadDimDiffers: return "head_dim differs";
    case FusedIneligibility::kKvSizeDiffers: return "kv size differs";
    case FusedIneligibility::kRotaryTableDiffers: return "rotary table differs";
    case FusedIneligibility::kEpsDiffers: return "eps differs";
  }
  return "unknown";
}

std::string FusedEligibility::to_string() const {
  if (eligible()) return "eligible";
  return std::string(fused_ineligibility_name(reason)) + " at " + detail;
}

FusedEligibility stacked_fused_eligibility(const StackedCtxKvCase& c, const RotaryTableEquality& tables_equal) {
  if (c.layers.empty()) return {};
  const StackedCtxKvLayer& first = c.layers.front();
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    if (l.quantized) return ineligible(FusedIneligibility::kQuantizedLayer, i, "its QKV weight is quantized");
    if (l.dtype() != DType::kBF16) return ineligible(FusedIneligibility::kWeightNotBf16, i, "float16 weights");
    // The pools have x's dtype (E153), so this fails at layer 0 or not at all.
    if (c.storage_dtype() != DType::kBF16)
      return ineligible(FusedIneligibility::kPoolsNotBf16, i, "float16 K and V pools (x is float16)");
    if (l.has_bias())
      return ineligible(
          FusedIneligibility::kBias, i,
          "a QKV bias of " + std::to_string(l.qkv_bias.meta.rank() == 1 ? l.qkv_bias.meta.size(0) : 0) + " entries");
    if (i == 0) continue;
    if (l.head_dim != first.head_dim)
      return ineligible(FusedIneligibility::kHeadDimDiffers, i,
                        "head_dim " + std::to_string(l.head_dim) + " vs layer 0's " + std::to_string(first.head_dim));
    if (l.kv_size() != first.kv_size())
      return ineligible(FusedIneligibility::kKvSizeDiffers, i,
                        "kv size " + std::to_string(l.kv_size()) + " (" + std::to_string(l.num_kv_heads) +
                            " kv heads) vs layer 0's " + std::to_string(first.kv_size()));
    const bool same_table = tables_equal ? tables_equal(i) : same_table_bytes(l.cos_sin, first.cos_sin);
    if (!same_table)
      return ineligible(FusedIneligibility::kRotaryTableDiffers, i,
                        tables_equal ? "its rotary table is another tensor than layer 0's"
                                     : "its rotary table differs from layer 0's");
    // Exact float equality.
    if (l.eps != first.eps)
      return ineligible(FusedIneligibility::kEpsDiffers, i,
                        "eps " + float_text(l.eps) + " vs layer 0's " + float_text(first.eps));
  }
  return {};
}

}  // namespace kvc
