// storage16.h: the 16-bit storage types of the contract (bf16, and f16 on the legacy op's fp16
// path), chosen by dtype. Every place that rounds to or widens from "q/kv's dtype" goes through
// these two, so the fp16 path cannot diverge from the bf16 one in any but the format itself.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp16.h"

namespace kvc::oracle {

inline float widen16(std::uint16_t bits, DType dtype) {
  return dtype == DType::kF16 ? fp16_to_float(bits) : bf16_to_float(bits);
}

inline std::uint16_t narrow16(float x, DType dtype) {
  return dtype == DType::kF16 ? float_to_fp16(x) : float_to_bf16(x);
}

}  // namespace kvc::oracle
