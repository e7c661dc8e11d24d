// dl_dtype.cpp: contract dtype -> DLPack type (see dl_dtype.h).
#include "testkit/device/dl_dtype.h"

#include <cstdint>

#include "kvc/kernel_abi.h"

namespace kvc::testkit {

DLDataType dl_dtype(DType t) {
  auto make = [](unsigned code, unsigned bits) {
    DLDataType d;
    d.code = static_cast<std::uint8_t>(code);
    d.bits = static_cast<std::uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (t) {
    case DType::kBF16:
      return make(kDLBfloat, 16);
    case DType::kF16:
      return make(kDLFloat, 16);
    case DType::kF32:
      return make(kDLFloat, 32);
    case DType::kI64:
      return make(kDLInt, 64);
    case DType::kI32:
      return make(kDLInt, 32);
    case DType::kU8:
      return make(kDLUInt, 8);
    case DType::kE4M3:
      return make(KVC_DL_FLOAT8_E4M3FN, 8);
  }
  return make(kDLOpaqueHandle, 0);
}

}  // namespace kvc::testkit
