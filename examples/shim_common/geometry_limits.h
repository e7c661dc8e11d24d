// geometry_limits.h: the cache geometry one binding of a shim's config accepts, beyond what the
// contract allows (kernel ABI 1.2, kvc_op_support.page_stride_rule .. block_sizes). A real op
// may take only dense pages, or pages padded to an alignment (SGLang's store: 576 bytes), or a
// few block sizes; declaring it lets the suite build its cases in that layout and report the rest
// skipped with the limit, instead of failing calls the op was never meant to take. Absent from
// the config, every limit is the contract's (the ABI's 0).
//
// In the config, optional members of a binding of an insert entry point (shim_config.h):
//   "page_stride": "any" | "dense" | {"aligned_up": <bytes>}
//   "block_sizes": "any" | "power_of_two" | [<block size>, ...]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/kernel_abi.h"

namespace kvc::shim {

enum class PageStrideRule : std::uint8_t {
  kAny,        // whatever page stride the contract allows
  kAlignedUp,  // exactly block_size * record bytes rounded up to page_stride_align
  kDense,      // exactly block_size * record bytes
};

enum class BlockSizeRule : std::uint8_t {
  kAny,
  kPowerOfTwo,
  kListed,  // one of block_sizes
};

struct GeometryLimits {
  PageStrideRule page_stride = PageStrideRule::kAny;
  std::int64_t page_stride_align = 0;  // bytes, kAlignedUp only
  BlockSizeRule block_size = BlockSizeRule::kAny;
  std::vector<std::int64_t> block_sizes;  // kListed only; what kvc_op_support.block_sizes points at
};

// The page stride in bytes that `limits` requires of a `format` cache of `block_size` tokens a
// page, or nothing when any is accepted.
std::optional<std::int64_t> required_page_stride(const GeometryLimits& limits, RecordFormat format,
                                                 std::int64_t block_size);

// Why a call with this block size and page stride (bytes; nothing when it overflows) is outside
// `limits`, or "" when it is inside.
std::string outside_limits(const GeometryLimits& limits, RecordFormat format, std::int64_t block_size,
                           std::optional<std::int64_t> page_stride_bytes);

// Writes the limits into the ABI 1.2 fields of `out` (the caller checked that struct_size covers
// them); `out->block_sizes` points into `limits`, which must outlive every reader.
void declare_limits(const GeometryLimits& limits, kvc_op_support* out);

}  // namespace kvc::shim
