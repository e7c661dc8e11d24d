// out_of_bounds_cases.h: the cases of gpu_out_of_bounds_test and of its fault child: a small
// KV-only case whose slots the test chooses, out-of-range ones included.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/insert_case.h"
#include "testkit/cases/case_builder.h"

namespace kvc::gpu {

// The small cases' geometry: 2 pages of 16 tokens (capacity 32), 32 bytes of page padding, full
// caches with a 16-byte row gap; one kv row per slot and one DP-padding row after them.
inline constexpr std::int64_t kOobPages = 2;
inline constexpr std::int64_t kOobBlockSize = 16;
inline constexpr std::int64_t kOobCapacity = kOobPages * kOobBlockSize;

inline InsertCase case_with_slots(RecordFormat f, const std::vector<std::int64_t>& slots) {
  testkit::Rng rng(0x00B5u + static_cast<std::uint64_t>(f));
  const testkit::CacheShape shape{f, kOobPages, kOobBlockSize, 32, is_packed(f) ? 0 : 16, 0};
  const auto rows = static_cast<std::int64_t>(slots.size()) + 1;
  testkit::KvInputs in;
  in.kv = testkit::random_bf16_rows(rng, rows);
  in.slots = slots;
  for (std::int64_t t = 0; t < rows; ++t) in.positions.push_back(3 + t);
  in.cos_sin = testkit::random_cos_sin(rng, 32);
  in.fp8_scale = 0.7f;
  return testkit::make_kv_only_case(shape, in);
}

}  // namespace kvc::gpu
