// float_bits.h: bit-level views of fp32 values (C++17 has no std::bit_cast), and the integer
// round-to-nearest-even shift that every narrowing conversion of the oracle is built on.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvc::oracle {

inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// v / 2^shift rounded to nearest, ties to even, for 1 <= shift <= 31 and v < 2^31. Adding
// (half - 1) plus the kept LSB carries into the kept part exactly when the dropped bits are above
// the midpoint, or at it with an odd kept part. No branch: the oracle's hot loops call this for
// every element, and a data-dependent rounding branch mispredicts about half the time.
inline std::uint32_t shift_right_rne(std::uint32_t v, unsigned shift) {
  const std::uint32_t half_minus_one = (1u << (shift - 1)) - 1u;
  return (v + half_minus_one + ((v >> shift) & 1u)) >> shift;
}

}  // namespace kvc::oracle
