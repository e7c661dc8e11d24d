// declared_store_layout.h: a store case in the layout a kernel library declares it takes
// (kvc_op_support's geometry limits, kvc/abi/capabilities.h), so that the store matrix checks a
// library with SGLang's geometry on SGLang's own cache instead of failing it on ours.
//
// What a layout may change is what the contract leaves to the caller: the cache's rank (our 3-D
// view or SGLang's 2-D [pages, page bytes]), its page stride (the one the stride rule gives), and
// the indices' dtype (int32 or int64, same values). The rows, the indices' values, the pages and
// the block size stay: a block size outside the limits has no layout, and the case is skipped
// naming that limit.
#pragma once

#include <optional>
#include <string>

#include "kvc/abi/capabilities.h"
#include "kvc/store_case.h"

namespace kvc::testkit {

struct DeclaredStoreLayout {
  std::optional<StoreCase> c;  // the case in a layout inside the limits (the case itself when it is)
  bool relaid = false;         // c differs from the case given (another rank, stride or index dtype)
  std::string why_not;         // no layout: the limit the case breaks, as abi::store_limit_breach words it
};

// `c` (a valid store case) laid out inside `limits`: its own layout when it is inside; else the
// allowed rank it has or the first allowed one, the declared page stride (the case's own under
// kAny), and its index dtype or the first allowed one. Nothing, with the reason, when the block
// size breaks the limits, the indices do not fit the allowed dtype, or the layout would break a
// strict validation rule (a declared alignment that leaves the page stride off 16 bytes).
DeclaredStoreLayout in_declared_layout(const StoreCase& c, const abi::GeometryLimits& limits);

// "2-D cache, page stride 9792 B, int32 indices": a store case's layout, for test names and traces.
std::string store_layout_name(const StoreCase& c);

}  // namespace kvc::testkit
