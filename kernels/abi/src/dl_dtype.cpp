// dl_dtype.cpp: contract dtypes <-> DLPack types (see dl_dtype.h). One table serves both
// directions, so that they cannot disagree.
#include "kvc/abi/dl_dtype.h"

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "kvc/kernel_abi.h"

namespace kvc::abi {
namespace {

struct DlpackType {
  DType dtype;
  std::uint8_t code;
  std::uint8_t bits;
};

constexpr DlpackType kDlpackTypes[] = {
    {DType::kBF16, kDLBfloat, 16},
    {DType::kF16, kDLFloat, 16},
    {DType::kF32, kDLFloat, 32},
    {DType::kI64, kDLInt, 64},
    {DType::kI32, kDLInt, 32},
    {DType::kU8, kDLUInt, 8},
    {DType::kE4M3, KVC_DL_FLOAT8_E4M3FN, 8},
};
// kI32 is the last DType: a new one needs its row above (dl_dtype_test checks every DType).
static_assert(std::size(kDlpackTypes) == static_cast<std::size_t>(DType::kI32) + 1, "one DLPack type per DType");

DLDataType make(std::uint8_t code, std::uint8_t bits) {
  DLDataType d;
  d.code = code;
  d.bits = bits;
  d.lanes = 1;
  return d;
}

}  // namespace

std::optional<DType> dtype_of(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  for (const DlpackType& d : kDlpackTypes)
    if (t.code == d.code && t.bits == d.bits) return d.dtype;
  return std::nullopt;
}

DLDataType dl_dtype(DType t) {
  for (const DlpackType& d : kDlpackTypes)
    if (d.dtype == t) return make(d.code, d.bits);
  return make(kDLOpaqueHandle, 0);
}

}  // namespace kvc::abi
