// tensor_rules.h: the per-tensor pieces of the insert, store and stacked validators (private to
// kvc::contract): how a rejection spells a tensor's shape, the harness rule that a tensor's bytes
// cover its metadata, the 16-byte alignment rule, and the search for a slot written twice.
//
// The three ops report these rules in the same words; writing them once keeps those words the
// same when one op's validator changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "kvc/status.h"

namespace kvc::detail {

// "[4, 512]": the sizes, as the rejections quote them.
std::string shape_text(const TensorMeta& m);

// kInputTooSmall when a present tensor's bytes end before its metadata's extent ("<name> [4, 512]
// needs 4096 bytes, has 1024"), else Ok. The metadata must already be well formed.
Status check_bytes_cover(const std::string& name, const HostTensor& t);

inline bool aligned(std::int64_t bytes) { return bytes % kAlignment == 0; }

struct RepeatedSlot {
  std::int64_t slot;
  std::int64_t first_row;
  std::int64_t second_row;
};

// The first slot that two of rows [0, n) write (slot_at(row); a negative slot writes nothing), or
// nothing. The strict rules reject it: two rows racing for one record leave either's bytes.
template <typename SlotAt>
std::optional<RepeatedSlot> first_repeated_slot(std::int64_t n, SlotAt&& slot_at) {
  std::unordered_map<std::int64_t, std::int64_t> first_row_of_slot;
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int64_t s = slot_at(t);
    if (s < 0) continue;
    const auto [it, inserted] = first_row_of_slot.emplace(s, t);
    if (!inserted) return RepeatedSlot{s, it->second, t};
  }
  return std::nullopt;
}

}  // namespace kvc::detail
