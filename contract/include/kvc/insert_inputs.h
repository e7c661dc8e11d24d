// insert_inputs.h: an insert case's input tensors under the names the ops give their arguments.
//
// The validator's rejections and the harness's messages name a tensor as the op's argument
// ("slot_mapping", not the field `slots`); both walk this one list, in argument order, so that a
// message names the same tensor wherever it comes from. q_out, an output, is not among them.
#pragma once

#include <array>

#include "kvc/insert_case.h"

namespace kvc {

struct NamedInput {
  const char* name;
  const HostTensor* tensor;
};

inline std::array<NamedInput, 8> named_inputs(const InsertCase& c) {
  return {{{"kv", &c.kv},
           {"slot_mapping", &c.slots},
           {"position_ids", &c.positions},
           {"cos_sin_cache", &c.cos_sin},
           {"fp8_scale", &c.fp8_scale},
           {"q", &c.q},
           {"q_scale_inv", &c.q_scale_inv},
           {"kv_norm_weight", &c.kv_norm_weight}}};
}

}  // namespace kvc
