// dlpack_case.h: DLPack tensors -> the metadata of a kvc::InsertCase, for the ABI wrapper.
//
// The wrapper validates with the contract's own rules (kvc::validate_insert, metadata only), so it
// needs the arguments in the contract's vocabulary: dtype, sizes, strides, device, and where the
// first element sits modulo the 16-byte alignment unit. No values are read: the tensors live on
// the device.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc::kernels::abi {

// The contract dtype of a DLPack dtype: bf16, f16, f32, i32, i64, u8 and the float8 e4m3fn code
// (KVC_DL_FLOAT8_E4M3FN); nothing for anything else (vector lanes included).
std::optional<DType> dtype_of(DLDataType t);

// Address of element 0 (data + byte_offset).
void* first_element(const DLTensor& t);

// A structural defect that is no validation rule (NULL, non-CUDA device, negative rank, NULL
// shape, NULL data for a non-empty tensor): the wrapper answers KVC_STATUS_BAD_ARGUMENT.
// Returns an empty string when the tensor is usable.
std::string structural_defect(const DLTensor* t, const char* name);

// Tensor metadata. A dtype the contract does not know becomes `unknown_dtype`, which the caller
// picks so that the validation rule for that argument rejects it with its own code.
TensorMeta tensor_meta(const DLTensor& t, DType unknown_dtype);
HostTensor metadata_tensor(const DLTensor& t, DType unknown_dtype);  // present, no bytes

// The paged cache view of a cache tensor (any rank: validation rejects rank != 3).
CacheGeometry cache_geometry(const DLTensor& t);

// Element-size alignment of a tensor the kernels read with scalar loads (slots, positions,
// scales, weights). Empty when aligned, else a message naming the tensor.
std::string element_misalignment(const DLTensor& t, int element_bytes, const char* name);

}  // namespace kvc::kernels::abi
