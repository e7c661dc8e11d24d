// limit_breach.h: whether a case lies inside the geometry a library declares (capabilities.h),
// and if not, which limit it breaks, in words a skipped test can print: "block size 48 is not a
// power of two (the library declares powers of two only)".
//
// The suite asks before every call (testkit's DeviceBackend::supports, supports_store) and
// reports a case outside the limits as skipped, since the library answers such a call with 402
// before any validation (kvc/kernel_abi.h); a library or shim may ask the same of the call it was
// given. Pure: no library is called. Metadata a validation rule rejects (a non-positive block
// size, a page stride past int64) is still judged against the limits where it can be, and never
// read out of bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvc/abi/capabilities.h"
#include "kvc/insert_case.h"
#include "kvc/store_case.h"

namespace kvc::abi {

// The limits, in the order they are checked.
enum class Limit : std::uint8_t { kIndexDtype = 0, kCacheRank = 1, kBlockSize = 2, kPageStride = 3 };

struct LimitBreach {
  Limit limit;
  std::string text;  // "page stride 9344 B: the library declares exactly ceil(bs * 584 / 576) * 576 = 9792 B"
};

// The first limit an insert case breaks (slot_mapping dtype, cache rank, block size, page stride),
// or nothing. A rule or list the library leaves at 0 / empty limits nothing: a value outside the
// contract (int32 slots, a 4-D cache) is then a validation rule's to reject with its code.
std::optional<LimitBreach> insert_limit_breach(const InsertCase& c, const GeometryLimits& limits);

// The same for a store case (indices dtype, cache rank, block size, page stride).
std::optional<LimitBreach> store_limit_breach(const StoreCase& c, const GeometryLimits& limits);

// The one page stride the page stride rule allows for `block_size` records of `record_bytes`, or
// nothing when the rule allows any (kAny) or the product leaves int64 or the block size is <= 0.
std::optional<std::int64_t> declared_page_stride(const GeometryLimits& limits, std::int64_t block_size,
                                                 std::int64_t record_bytes);

}  // namespace kvc::abi
