// geometry_limits.cpp: a binding's declared cache geometry (see geometry_limits.h).
#include "geometry_limits.h"

#include <algorithm>

#include "kvc/checked_math.h"

namespace kvc::shim {

std::optional<std::int64_t> required_page_stride(const GeometryLimits& limits, RecordFormat format,
                                                 std::int64_t block_size) {
  const CheckedI64 dense = checked_mul(block_size, static_cast<std::int64_t>(layout_of(format).record_bytes()));
  switch (limits.page_stride) {
    case PageStrideRule::kAny: return std::nullopt;
    case PageStrideRule::kDense: return dense.value_or(-1);
    case PageStrideRule::kAlignedUp: {
      const std::int64_t align = limits.page_stride_align;
      if (!dense || align <= 0) return -1;  // no page can meet it
      return checked_mul((*dense + align - 1) / align, align).value_or(-1);
    }
  }
  return std::nullopt;
}

std::string outside_limits(const GeometryLimits& limits, RecordFormat format, std::int64_t block_size,
                           std::optional<std::int64_t> page_stride_bytes) {
  switch (limits.block_size) {
    case BlockSizeRule::kAny: break;
    case BlockSizeRule::kPowerOfTwo:
      if (block_size <= 0 || (block_size & (block_size - 1)) != 0)
        return "block size " + std::to_string(block_size) + " is not a power of two";
      break;
    case BlockSizeRule::kListed:
      if (std::find(limits.block_sizes.begin(), limits.block_sizes.end(), block_size) == limits.block_sizes.end()) {
        std::string listed;
        for (std::int64_t b : limits.block_sizes) listed += (listed.empty() ? "" : ", ") + std::to_string(b);
        return "block size " + std::to_string(block_size) + " is not one of " + listed;
      }
      break;
  }
  if (const std::optional<std::int64_t> required = required_page_stride(limits, format, block_size)) {
    if (*required < 0) return "no page stride meets the limit with block size " + std::to_string(block_size);
    if (page_stride_bytes != required) {
      const char* rule =
          limits.page_stride == PageStrideRule::kDense ? "dense pages" : "pages padded to a multiple of the alignment";
      return std::string("page stride ") +
             (page_stride_bytes ? std::to_string(*page_stride_bytes) + " B" : std::string("(overflows)")) +
             " is not the " + std::to_string(*required) + " B of " + rule + " (" + std::string(layout_of(format).name) +
             ", block size " + std::to_string(block_size) +
             (limits.page_stride == PageStrideRule::kAlignedUp
                  ? ", alignment " + std::to_string(limits.page_stride_align) + " B"
                  : std::string()) +
             ")";
    }
  }
  return {};
}

void declare_limits(const GeometryLimits& limits, kvc_op_support* out) {
  switch (limits.page_stride) {
    case PageStrideRule::kAny: out->page_stride_rule = KVC_PAGE_STRIDE_ANY; break;
    case PageStrideRule::kAlignedUp: out->page_stride_rule = KVC_PAGE_STRIDE_ALIGNED_UP; break;
    case PageStrideRule::kDense: out->page_stride_rule = KVC_PAGE_STRIDE_DENSE; break;
  }
  out->page_stride_align =
      limits.page_stride == PageStrideRule::kAlignedUp ? static_cast<std::int32_t>(limits.page_stride_align) : 0;
  out->block_size_count = 0;
  out->block_sizes = nullptr;
  switch (limits.block_size) {
    case BlockSizeRule::kAny: out->block_size_rule = KVC_BLOCK_SIZE_ANY; break;
    case BlockSizeRule::kPowerOfTwo: out->block_size_rule = KVC_BLOCK_SIZE_POWER_OF_TWO; break;
    case BlockSizeRule::kListed:
      out->block_size_rule = KVC_BLOCK_SIZE_LISTED;
      out->block_size_count = static_cast<std::int32_t>(limits.block_sizes.size());
      out->block_sizes = limits.block_sizes.data();
      break;
  }
}

}  // namespace kvc::shim
