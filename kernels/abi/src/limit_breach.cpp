// limit_breach.cpp: a case against a library's declared geometry (see limit_breach.h).
#include "kvc/abi/limit_breach.h"

#include <algorithm>
#include <vector>

#include "kvc/checked_math.h"

namespace kvc::abi {
namespace {

// The case's geometry as the limits see it; a value metadata cannot give is nothing.
struct Geometry {
  DType index_dtype;
  int cache_rank;
  std::int64_t block_size;
  std::optional<std::int64_t> page_stride_bytes;
  std::optional<std::int64_t> record_bytes;
};

std::string list_of(const std::vector<std::string>& items) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return s;
}

std::optional<LimitBreach> index_breach(const Geometry& g, const std::vector<DType>& allowed, const char* what) {
  if (std::find(allowed.begin(), allowed.end(), g.index_dtype) != allowed.end()) return std::nullopt;
  std::vector<std::string> names;
  for (DType t : allowed) names.push_back(index_dtype_name(t));
  return LimitBreach{Limit::kIndexDtype, std::string(index_dtype_name(g.index_dtype)) + " " + what +
                                             ": the library declares " + list_of(names) + " indices only"};
}

std::optional<LimitBreach> rank_breach(const Geometry& g, const std::vector<int>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), g.cache_rank) != allowed.end()) return std::nullopt;
  std::vector<std::string> names;
  for (int r : allowed) names.push_back(std::to_string(r) + "-D");
  return LimitBreach{Limit::kCacheRank, "a " + std::to_string(g.cache_rank) + "-D cache: the library declares " +
                                            list_of(names) + " caches only"};
}

bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::optional<LimitBreach> block_size_breach(const Geometry& g, const GeometryLimits& l) {
  const std::string bs = "block size " + std::to_string(g.block_size);
  switch (l.block_size) {
    case BlockSizeRule::kAny: return std::nullopt;
    case BlockSizeRule::kPowerOfTwo:
      if (power_of_two(g.block_size)) return std::nullopt;
      return LimitBreach{Limit::kBlockSize, bs + " is not a power of two (the library declares powers of two only)"};
    case BlockSizeRule::kListed: {
      if (std::find(l.block_sizes.begin(), l.block_sizes.end(), g.block_size) != l.block_sizes.end())
        return std::nullopt;
      std::vector<std::string> names;
      for (std::int64_t s : l.block_sizes) names.push_back(std::to_string(s));
      return LimitBreach{Limit::kBlockSize,
                         bs + " is not listed (the library declares block sizes " + list_of(names) + " only)"};
    }
  }
  return std::nullopt;
}

std::optional<LimitBreach> page_stride_breach(const Geometry& g, const GeometryLimits& l) {
  if (l.page_stride == PageStrideRule::kAny || !g.page_stride_bytes || !g.record_bytes) return std::nullopt;
  const std::optional<std::int64_t> expected = declared_page_stride(l, g.block_size, *g.record_bytes);
  if (expected && *expected == *g.page_stride_bytes) return std::nullopt;
  const std::string rec = std::to_string(*g.record_bytes);
  const std::string formula = l.page_stride == PageStrideRule::kDense
                                  ? "bs * " + rec
                                  : "ceil(bs * " + rec + " / " + std::to_string(l.page_stride_align) + ") * " +
                                        std::to_string(l.page_stride_align);
  std::string text =
      "page stride " + std::to_string(*g.page_stride_bytes) + " B: the library declares exactly " + formula;
  if (expected)
    text += " = " + std::to_string(*expected) + " B";
  else
    text += ", which block size " + std::to_string(g.block_size) + " does not give";
  if (l.page_stride == PageStrideRule::kDense) text += " (dense pages)";
  return LimitBreach{Limit::kPageStride, text};
}

// An empty list declares no limit: a value outside the contract (a float32 index) is then a
// validation rule's to reject, with its own code, not a limit's.
std::optional<LimitBreach> breach(const Geometry& g, const GeometryLimits& l, const char* index_what) {
  if (!l.index_dtypes.empty())
    if (auto b = index_breach(g, l.index_dtypes, index_what)) return b;
  if (!l.cache_ranks.empty())
    if (auto b = rank_breach(g, l.cache_ranks)) return b;
  if (auto b = block_size_breach(g, l)) return b;
  return page_stride_breach(g, l);
}

}  // namespace

std::optional<std::int64_t> declared_page_stride(const GeometryLimits& l, std::int64_t block_size,
                                                 std::int64_t record_bytes) {
  if (l.page_stride == PageStrideRule::kAny || block_size <= 0) return std::nullopt;
  const CheckedI64 dense = checked_mul(block_size, record_bytes);
  if (!dense) return std::nullopt;
  if (l.page_stride == PageStrideRule::kDense) return *dense;
  if (l.page_stride_align <= 0) return std::nullopt;
  const std::int64_t units = *dense / l.page_stride_align + (*dense % l.page_stride_align != 0 ? 1 : 0);
  const CheckedI64 aligned = checked_mul(units, l.page_stride_align);
  if (!aligned) return std::nullopt;
  return *aligned;
}

std::optional<LimitBreach> insert_limit_breach(const InsertCase& c, const GeometryLimits& limits) {
  Geometry g{c.slots.meta.dtype, c.cache.rank, c.block_size, std::nullopt, std::nullopt};
  g.page_stride_bytes = c.cache.checked_page_stride_bytes();
  if (const std::optional<RecordFormat> f = format_of(c)) g.record_bytes = layout_of(*f).record_bytes();
  return breach(g, limits, "slot_mapping");
}

std::optional<LimitBreach> store_limit_breach(const StoreCase& c, const GeometryLimits& limits) {
  Geometry g{c.indices.meta.dtype, c.cache.rank(), c.block_size, std::nullopt, std::nullopt};
  // stride(0) of a uint8 cache is its page stride in bytes; metadata with no stride has none.
  if (!c.cache.strides.empty() && c.cache.dtype == DType::kU8) g.page_stride_bytes = c.cache.strides.front();
  g.record_bytes = layout_of(store_format(c)).record_bytes();
  return breach(g, limits, "indices");
}

}  // namespace kvc::abi
