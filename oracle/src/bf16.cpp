// bf16.cpp: bf16 conversions (see bf16.h).
#include "kvc/oracle/bf16.h"

#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {

float bf16_to_float(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t float_to_bf16(float x) {
  const std::uint32_t bits = bits_of(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kBf16CanonicalNan;
  // Adding 0x7FFF plus the kept LSB carries into bit 16 exactly when the discarded half is above
  // the midpoint, or at it with an odd kept part: round to nearest, ties to even. Overflow of the
  // exponent yields 0x7F80 (Inf), which is the correct rounding of values >= the max midpoint.
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace kvc::oracle
