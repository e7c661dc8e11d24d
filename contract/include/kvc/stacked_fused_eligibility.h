// stacked_fused_eligibility.h: whether a model may take the fused path, and if not why.
//
// docs/contract.md §4.5 (version 3): the fused path projects each (token, layer, kv head)'s K and
// V rows and runs the epilogue on them in one kernel, reading every layer's own weights. The
// dispatch it models (issue 25, fact 3) takes it only for bf16 weights and pools, no bias, equal
// head_dim and kv size, the same rotary table and equal eps on every layer. Three more conditions
// of that dispatch always hold in this contract and are not checked here: no k/v scales (the op
// has none), NeoX rope with rotary_dim == head_dim (the only rope the op has), and pools
// [*, nkv, hd] with stride(1) == hd (E154 and E155 reject any other pool). A quantized layer is
// ineligible too: its weight is not a bf16 tensor.
//
// Layers are walked in order, each condition in the order of the enum below (per layer: its
// quantization, weight dtype, storage dtype, bias; from layer 1 on, its comparisons with layer 0);
// the first failing condition is reported with its layer. As for the stacked path
// (stacked_ctx_kv_eligibility.h) this is metadata plus exact comparisons: the oracle and the
// kernels' ABI wrapper share it, the wrapper passing its own table comparison (tensor identity).
#pragma once

#include <cstdint>
#include <string>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_ctx_kv_eligibility.h"

namespace kvc {

enum class FusedIneligibility : std::uint8_t {
  kNone = 0,
  kQuantizedLayer = 1,      // layer i's QKV weight is quantized (not a bf16 tensor)
  kWeightNotBf16 = 2,       // layer i's weights are float16
  kPoolsNotBf16 = 3,        // x and the pools (layer i's) are float16
  kBias = 4,                // layer i has a QKV bias
  kHeadDimDiffers = 5,      // layer i's head_dim != layer 0's
  kKvSizeDiffers = 6,       // layer i's kv size (kv heads * head_dim) != layer 0's
  kRotaryTableDiffers = 7,  // layer i's rotary table != layer 0's (shape or any byte)
  kEpsDiffers = 8,          // layer i's eps != layer 0's (exact float compare)
};

const char* fused_ineligibility_name(FusedIneligibility r);  // "bias", "weights not bf16", ...

struct FusedEligibility {
  FusedIneligibility reason = FusedIneligibility::kNone;
  int layer = -1;      // the layer the condition fails at
  std::string detail;  // "layer 1: a QKV bias of 1536 entries"

  bool eligible() const { return reason == FusedIneligibility::kNone; }
  std::string to_string() const;  // "eligible" or "<name> at layer i: <detail>"
};

// The fused-path eligibility of a validated case. `tables_equal` null: compare the tables' bytes.
FusedEligibility stacked_fused_eligibility(const StackedCtxKvCase& c, const RotaryTableEquality& tables_equal = {});

}  // namespace kvc
