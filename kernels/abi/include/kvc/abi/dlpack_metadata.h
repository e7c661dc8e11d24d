// dlpack_metadata.h: DLPack tensors -> the contract's metadata (TensorMeta, HostTensor,
// CacheGeometry), so that an implementation of the ABI validates a call with the contract's own
// rules (kvc::validate_insert etc., metadata only): dtype, sizes, strides, device, and where the
// first element sits modulo the 16-byte alignment unit. No values are read: the tensors live on
// the device.
#pragma once

#include <dlpack/dlpack.h>

#include <string>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc::abi {

// Address of element 0 (data + byte_offset).
void* first_element(const DLTensor& t);

// Tensor metadata. A dtype the contract does not know becomes `unknown_dtype`, which the caller
// picks so that the validation rule for that argument rejects it with its own code.
TensorMeta tensor_meta(const DLTensor& t, DType unknown_dtype);
HostTensor metadata_tensor(const DLTensor& t, DType unknown_dtype);  // present, no bytes

// The paged cache view of a cache tensor (any rank: validation rejects rank != 3).
CacheGeometry cache_geometry(const DLTensor& t);

// Element-size alignment of a tensor read with scalar loads (slots, positions, scales, weights).
// Empty when aligned, else a message naming the tensor.
std::string element_misalignment(const DLTensor& t, int element_bytes, const char* name);

}  // namespace kvc::abi
