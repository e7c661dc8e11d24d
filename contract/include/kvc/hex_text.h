// hex_text.h: raw bits as report text: "0x3a", "0x3f80", "0x3f800000".
//
// Every report that shows a byte, a 16-bit value or an fp32 pattern spells it this way (the
// record codec's field descriptions, the mismatch classifier, the rsqrt checker), so the same
// bits read the same in all of them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace kvc {

// `bits` as "0x" and at least `digits` lowercase hex digits.
inline std::string hex(std::uint64_t bits, int digits) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%0*llx", digits, static_cast<unsigned long long>(bits));
  return s;
}

}  // namespace kvc
