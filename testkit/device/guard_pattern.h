// guard_pattern.h: the byte a guard zone holds at each position, one formula for the host and the
// device (the guard zones are written and scanned by kernels, checked byte by byte on the host).
//
// A multiplicative hash of the index: no run of equal bytes, so neither a constant fill (the
// canary, a zero, a 0x5A record) nor a shifted copy of the guard itself can pass for it.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define KVC_GUARD_PATTERN_FN __host__ __device__ inline
#else
#define KVC_GUARD_PATTERN_FN inline
#endif

namespace kvc::testkit {

// Byte `index` of a guard zone, counted from the zone's first byte.
KVC_GUARD_PATTERN_FN std::uint8_t guard_pattern_byte(std::int64_t index) {
  return static_cast<std::uint8_t>((static_cast<std::uint64_t>(index) * 0x9E3779B97F4A7C15ull) >> 56);
}

}  // namespace kvc::testkit

#undef KVC_GUARD_PATTERN_FN
