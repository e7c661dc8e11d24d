// fp8_e4m3.cpp: e4m3fn decoding (see fp8_e4m3.h; the encoders are inline there).
#include "kvc/oracle/fp8_e4m3.h"

#include <cmath>

#include "kvc/oracle/float_bits.h"

namespace kvc::oracle {

float e4m3_decode(std::uint8_t code) {
  constexpr int kBias = static_cast<int>(e4m3_detail::kE4m3Bias);
  const bool negative = (code & 0x80u) != 0;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  float magnitude;
  if (exponent == 0xF && mantissa == 0x7) {
    magnitude = float_of(0x7FC00000u);
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - kBias - 3);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace kvc::oracle
