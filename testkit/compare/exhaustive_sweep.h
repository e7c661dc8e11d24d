// exhaustive_sweep.h: run a predicate over every 32-bit pattern (or a range of them) on all cores.
//
// The exhaustive primitive tests check 2^32 inputs; on the 2-core CI machine each sweep must stay
// within tens of seconds, so the range is split into interleaved chunks across threads. The sweep
// counts mismatches, keeps the first few (lowest input first) for the report, and its wall time.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace kvc::testkit {

struct SweepResult {
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;
  std::vector<std::uint32_t> first_mismatches;  // up to kKeptMismatches, ascending
  double seconds = 0.0;
  static constexpr std::size_t kKeptMismatches = 8;
};

// Calls matches(u) for every u in [begin, end] (inclusive, so the full 2^32 range is expressible).
// `matches` must be thread-safe; it returns true when the input passes.
SweepResult sweep_u32(std::uint32_t begin, std::uint32_t end, const std::function<bool(std::uint32_t)>& matches);

// One line for the test log: "<what>: N inputs, M mismatches, T s".
std::string describe(const std::string& what, const SweepResult& r);

// Every fp32 bit pattern, as a float, through `matches` (thread-safe); prints describe(what, r),
// the line each exhaustive encoder test leaves in its log.
SweepResult sweep_every_float(const std::string& what, const std::function<bool(float)>& matches);

// The bits of a 2-byte value (CUDA's __half, __nv_bfloat16), to compare with an encoder's.
template <typename T>
std::uint16_t bits16_of(const T& v) {
  static_assert(sizeof(T) == sizeof(std::uint16_t), "a 2-byte value");
  std::uint16_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

}  // namespace kvc::testkit
