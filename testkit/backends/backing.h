// backing.h: cache backing buffers with canary fill and a guard zone.
//
// A backing holds the whole cache view (every page, padding included) plus kGuardBytes after it.
// Everything starts as the canary byte, so any byte a backend writes that the contract does not
// name shows up in a whole-buffer diff: page padding, row gaps, skipped slots and the guard zone.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/insert_case.h"

namespace kvc::testkit {

inline constexpr std::uint8_t kCanary = 0xA5;  // the upstream test's fill (165)
inline constexpr std::int64_t kGuardBytes = 256;

std::vector<std::uint8_t> make_backing(const CacheGeometry& g, std::uint8_t canary = kCanary);

// Outputs for a case: the backing (canary-filled) and the q output buffer (also canary-filled, so
// unwritten Q elements are visible too).
InsertOutputs make_outputs(const InsertCase& c, std::uint8_t canary = kCanary);

}  // namespace kvc::testkit
