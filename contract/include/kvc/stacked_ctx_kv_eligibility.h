// stacked_ctx_kv_eligibility.h: whether a model may take the stacked path, and if not why.
//
// docs/contract.md §4.5: the stacked path concatenates every layer's KV weight rows, so every
// layer must be unquantized, every eps equal (exact float equality), and the bias present on all
// layers or none; the contract adds equal head_dim, kv heads, weight dtype and rotary table, which
// the original assumed without checking. The first failing condition is reported with the layer
// it fails at. Layers are walked in order (quantization, then the per-layer comparisons with
// layer 0); the bias presence is judged after the walk, as the original does.
//
// This is metadata plus exact comparisons, no arithmetic, so the oracle and the kernels' ABI
// wrapper share it. The rotary-table comparison is the one that needs values: the host compares
// the tables' bytes; a wrapper that sees device pointers passes its own comparison (tensor
// identity), which can only call more models ineligible, never fewer.
#pragma once

#include <functional>
#include <string>

#include "kvc/stacked_ctx_kv_case.h"

namespace kvc {

enum class StackedIneligibility : std::uint8_t {
  kNone = 0,
  kQuantizedLayer = 1,      // layer i's QKV weight is quantized (cannot be sliced)
  kEpsDiffers = 2,          // layer i's eps != layer 0's (exact float compare)
  kBiasOnSomeLayers = 3,    // layer i has a bias and layer 0 has none, or the reverse
  kHeadDimDiffers = 4,      // layer i's head_dim != layer 0's
  kKvHeadsDiffers = 5,      // layer i's kv heads != layer 0's
  kDtypeDiffers = 6,        // layer i's weight dtype != layer 0's
  kRotaryTableDiffers = 7,  // layer i's rotary table != layer 0's (shape or any byte)
};

const char* ineligibility_name(StackedIneligibility r);  // "quantized layer", "eps differs", ...

struct StackedEligibility {
  StackedIneligibility reason = StackedIneligibility::kNone;
  int layer = -1;      // the layer the condition fails at
  std::string detail;  // "layer 1: eps 1e-05 vs layer 0's 1e-06"

  bool eligible() const { return reason == StackedIneligibility::kNone; }
  std::string to_string() const;  // "eligible" or "<name> at layer i: <detail>"
};

// Whether layer i's rotary table equals layer 0's (i > 0).
using RotaryTableEquality = std::function<bool(int layer)>;

// The eligibility of a validated case. `tables_equal` null: compare the tables' metadata and
// bytes (the host holds them).
StackedEligibility stacked_ctx_kv_eligibility(const StackedCtxKvCase& c, const RotaryTableEquality& tables_equal = {});

}  // namespace kvc
