// index_tails.cpp: see index_tails.h.
#include "testkit/cases/index_tails.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace kvc::testkit {
namespace {

void append(HostTensor& t, const std::vector<std::int64_t>& values) {
  const std::size_t at = t.bytes.size();
  t.bytes.resize(at + values.size() * sizeof(std::int64_t));
  std::memcpy(t.bytes.data() + at, values.data(), values.size() * sizeof(std::int64_t));
}

}  // namespace

void extend_with_index_tails(InsertCase& c, Rng& rng) {
  if (c.slots.meta.offset_bytes != 0 || c.positions.meta.offset_bytes != 0)
    throw std::invalid_argument("extend_with_index_tails: the index tensors are already views");
  const std::int64_t capacity = c.cache.num_blocks * c.block_size;
  std::unordered_set<std::int64_t> live;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (const std::int64_t s = c.slots.load<std::int64_t>(t); s >= 0) live.insert(s);
  std::vector<std::int64_t> free;
  for (std::int64_t s = 0; s < capacity; ++s)
    if (!live.count(s)) free.push_back(s);
  const std::int64_t want = index_tail_slots(c.num_rows(), c.num_inserted());
  if (static_cast<std::int64_t>(free.size()) < want)
    throw std::invalid_argument("extend_with_index_tails: " + std::to_string(free.size()) +
                                " free slots for a tail of " + std::to_string(want));
  std::vector<std::int64_t> tail;
  for (std::int64_t i : rng.distinct(static_cast<std::int64_t>(free.size()), want))
    tail.push_back(free[static_cast<std::size_t>(i)]);
  append(c.slots, tail);

  const std::int64_t max_pos = c.cos_sin.meta.size(0);
  std::vector<std::int64_t> positions;
  for (std::int64_t k = 0; k < kTailRowsPastN; ++k) positions.push_back((c.num_rows() + k) % max_pos);
  append(c.positions, positions);
}

}  // namespace kvc::testkit
