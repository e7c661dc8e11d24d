// dl_dtype.h: the DLPack type of a contract dtype, for everything that describes a case's tensors
// as DLTensors (the device backend, the benchmarks, the shims' CPU tests).
#pragma once

#include <dlpack/dlpack.h>

#include "kvc/contract.h"

namespace kvc::testkit {

// bf16, f16, f32, i64, i32, u8, and e4m3fn as KVC_DL_FLOAT8_E4M3FN; one lane. A DType without a
// DLPack type (none today) gives kDLOpaqueHandle with 0 bits, which every validation rejects.
DLDataType dl_dtype(DType t);

}  // namespace kvc::testkit
