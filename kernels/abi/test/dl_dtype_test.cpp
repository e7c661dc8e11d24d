// dl_dtype_test.cpp: the DLPack <-> contract dtype mapping (kvc/abi/dl_dtype.h), which every ABI
// implementation reads its tensors through and the device backend describes them with.
// Catches: a dtype written with one DLPack type and read back as another (int32 indices read as
// int64 would make the store op read past them); the float8 e4m3fn code forgotten (every fp8_512
// cache would be rejected as kCacheDtype); a vector-lane or unknown type taken for a scalar one.
// (A new DType without its DLPack type fails dl_dtype.cpp's static_assert.)
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "kvc/abi/dl_dtype.h"
#include "kvc/kernel_abi.h"

namespace kvc::abi {
namespace {

DLDataType type(unsigned code, unsigned bits, unsigned lanes = 1) {
  DLDataType t;
  t.code = static_cast<std::uint8_t>(code);
  t.bits = static_cast<std::uint8_t>(bits);
  t.lanes = static_cast<std::uint16_t>(lanes);
  return t;
}

constexpr DType kEveryDType[] = {DType::kBF16, DType::kF16,  DType::kF32, DType::kI64,
                                 DType::kU8,   DType::kE4M3, DType::kI32};

TEST(AbiDlDtype, EveryDTypeRoundTrips) {
  for (DType t : kEveryDType) {
    const DLDataType d = dl_dtype(t);
    EXPECT_EQ(d.lanes, 1) << "DType " << static_cast<int>(t);
    EXPECT_EQ(d.bits, 8 * dtype_size(t)) << "DType " << static_cast<int>(t);
    EXPECT_EQ(dtype_of(d), std::optional<DType>(t)) << "DType " << static_cast<int>(t);
  }
}

TEST(AbiDlDtype, TheDlpackTypesAreTheStandardOnes) {
  const struct {
    DType dtype;
    unsigned code;
    unsigned bits;
  } expected[] = {{DType::kBF16, kDLBfloat, 16},
                  {DType::kF16, kDLFloat, 16},
                  {DType::kF32, kDLFloat, 32},
                  {DType::kI64, kDLInt, 64},
                  {DType::kI32, kDLInt, 32},
                  {DType::kU8, kDLUInt, 8},
                  {DType::kE4M3, KVC_DL_FLOAT8_E4M3FN, 8}};
  for (const auto& e : expected) {
    EXPECT_EQ(dl_dtype(e.dtype).code, e.code) << "DType " << static_cast<int>(e.dtype);
    EXPECT_EQ(dl_dtype(e.dtype).bits, e.bits) << "DType " << static_cast<int>(e.dtype);
  }
}

TEST(AbiDlDtype, OtherDlpackTypesHaveNoContractDtype) {
  EXPECT_EQ(dtype_of(type(kDLBfloat, 16, 2)), std::nullopt) << "two lanes";
  EXPECT_EQ(dtype_of(type(kDLFloat, 64)), std::nullopt);
  EXPECT_EQ(dtype_of(type(kDLInt, 8)), std::nullopt);
  EXPECT_EQ(dtype_of(type(kDLUInt, 16)), std::nullopt);
  EXPECT_EQ(dtype_of(type(KVC_DL_BOOL, 8)), std::nullopt);
  EXPECT_EQ(dtype_of(type(kDLOpaqueHandle, 0)), std::nullopt);
}

}  // namespace
}  // namespace kvc::abi
