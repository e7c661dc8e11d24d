// stacked_cache_loc_layout.cpp: see stacked_cache_loc_layout.h.
#include "testkit/cases/stacked_cache_loc_layout.h"

#include <algorithm>
#include <cstdint>
#include <set>

namespace kvc::testkit {

StackedCtxKvCase in_cache_loc_policy(const StackedCtxKvCase& c, CacheLocPolicy policy) {
  if (policy == CacheLocPolicy::kNegativeSkipped || !c.cache_loc.present || c.cache_loc.meta.dtype != DType::kI64)
    return c;
  StackedCtxKvCase out = c;
  const std::int64_t tokens = c.cache_loc.meta.rank() >= 1 ? c.cache_loc.meta.numel() : 0;
  std::int64_t slots = INT64_MAX;
  for (const StackedCtxKvLayer& l : c.layers)
    slots = std::min({slots, l.k_pool.rank() == 3 ? l.k_pool.size(0) : 0, l.v_pool.rank() == 3 ? l.v_pool.size(0) : 0});
  std::set<std::int64_t> used;
  for (std::int64_t t = 0; t < tokens; ++t) used.insert(c.cache_loc.load<std::int64_t>(t));
  std::int64_t free_slot = 1;
  while (used.count(free_slot) != 0) ++free_slot;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t loc = c.cache_loc.load<std::int64_t>(t);
    if (loc < 0)
      out.cache_loc.store<std::int64_t>(t, 0);
    else if (loc == 0 && free_slot < slots)
      out.cache_loc.store<std::int64_t>(t, free_slot);
  }
  return out;
}

}  // namespace kvc::testkit
