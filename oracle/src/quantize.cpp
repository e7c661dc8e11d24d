// quantize.cpp: the ties-away mutant (see quantize.h).
#include "kvc/oracle/quantize.h"

#include <cmath>

namespace kvc::oracle {

// At an exact midpoint the two neighbours of v encode differently; pick the one farther from zero.
std::uint8_t e4m3_ties_away(float v, ClampOrder order) {
  const float toward = std::nextafter(v, 0.0f);
  const float away = std::nextafter(v, std::signbit(v) ? -INFINITY : INFINITY);
  if (!std::isnan(v) && v != 0.0f && e4m3_encode(toward, order) != e4m3_encode(away, order)) {
    const std::uint8_t exact = e4m3_encode(v, order);
    if (e4m3_decode(exact) != clamp_fp8_range(v, order)) return e4m3_encode(away, order);
  }
  return e4m3_encode(v, order);
}

}  // namespace kvc::oracle
