// float_bits.h: bit-level views of fp32 values (C++17 has no std::bit_cast).
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

}  // namespace kvc::oracle
