// edge_values.cpp: see edge_values.h.
#include "testkit/cases/edge_values.h"

#include <cstddef>

#include "kvc/contract.h"

namespace kvc::testkit {
namespace {

constexpr std::uint16_t kNan = 0x7FC0, kNegativeNanPayload = 0xFFC1, kSignallingNan = 0x7F81;
constexpr std::uint16_t kPosInf = 0x7F80, kNegInf = 0xFF80, kNegZero = 0x8000;
constexpr std::uint16_t kMaxFinite = 0x7F7F;  // 3.39e38
constexpr std::uint16_t kBf16_330 = 0x43A5, kBf16_Neg1e4 = 0xC61C;
constexpr std::uint16_t kSignBit = 0x8000;

// A bf16 subnormal (exponent field 0, mantissa 1..127) of either sign, from the dim.
std::uint16_t subnormal(int dim) { return static_cast<std::uint16_t>((dim % 2 == 0 ? 0 : kSignBit) | (1 + dim % 127)); }

}  // namespace

void plant_edge_values(std::vector<std::uint16_t>& rows) {
  const std::size_t n = rows.size() / kHeadDim;
  for (std::size_t r = 0; r < n; ++r) {
    std::uint16_t* row = rows.data() + r * kHeadDim;
    switch (r % kEdgePatterns) {
      case 0:
        row[70] = kNan;
        row[200] = kNegativeNanPayload;
        break;
      case 1:
        row[130] = kPosInf;
        row[131] = kNegZero;
        break;
      case 2: row[260] = kNegInf; break;
      case 3: row[452] = kSignallingNan; break;
      case 4:
        row[470] = kPosInf;
        row[501] = kNegInf;
        break;
      case 5:
        for (int d = 320; d < 384; ++d) row[d] = kNegZero;
        row[490] = kNegZero;
        break;
      case 6:
        for (int d = 384; d < kNopeDim; ++d) row[d] = subnormal(d);
        for (int d = 0; d < 16; ++d) row[d] = subnormal(d + 1);
        row[480] = subnormal(3);
        break;
      default:
        row[10] = kBf16_330;
        row[11] = kBf16_Neg1e4;
        row[12] = kMaxFinite;
        row[13] = static_cast<std::uint16_t>(kMaxFinite | kSignBit);
        row[460] = kMaxFinite;
        break;
    }
  }
}

}  // namespace kvc::testkit
