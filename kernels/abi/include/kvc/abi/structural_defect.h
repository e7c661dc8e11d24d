// structural_defect.h: the defects of a call that no validation rule names, because the
// contract's vocabulary cannot express them: a NULL tensor, one on no CUDA device, a negative
// rank, a NULL shape, NULL data under elements. An implementation of the ABI answers them
// KVC_STATUS_BAD_ARGUMENT before it describes the call in the contract's terms.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace kvc::abi {

// Whether an argument may be absent: an optional tensor is checked only when given.
enum class Presence : std::uint8_t { kRequired, kOptional };

struct NamedTensor {
  const DLTensor* tensor;
  const char* name;
  Presence presence = Presence::kRequired;
};

// Empty when the tensor is usable, else a message naming it ("kv is NULL"). Negative or
// overflowing sizes are no structural defect: validation names them (kTensorMetaInvalid).
std::string structural_defect(const DLTensor* t, const std::string& name);

// The first defect among `tensors`, in order; empty when there is none.
std::string first_structural_defect(std::initializer_list<NamedTensor> tensors);

}  // namespace kvc::abi
