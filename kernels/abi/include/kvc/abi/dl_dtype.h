// dl_dtype.h: contract dtypes <-> DLPack types, both ways, for everything that passes a case's
// tensors through the kernel ABI: the ABI's implementations read them (our wrapper, the shims),
// the device backend, the benchmarks and the shims' tests describe them.
#pragma once

#include <dlpack/dlpack.h>

#include <optional>

#include "kvc/contract.h"

namespace kvc::abi {

// The contract dtype of a DLPack type: bf16, f16, f32, i64, i32, u8 and float8 e4m3fn (DLPack
// 1.1's code, KVC_DL_FLOAT8_E4M3FN), one lane; nothing for anything else (vector lanes included).
std::optional<DType> dtype_of(DLDataType t);

// The inverse: dtype_of(dl_dtype(t)) == t for every DType. A DType without a DLPack type (none
// today) gives kDLOpaqueHandle with 0 bits, which dtype_of and every validation reject.
DLDataType dl_dtype(DType t);

}  // namespace kvc::abi
