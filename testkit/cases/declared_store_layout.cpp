// declared_store_layout.cpp: see declared_store_layout.h.
#include "testkit/cases/declared_store_layout.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kvc/abi/limit_breach.h"
#include "kvc/validate_store.h"

namespace kvc::testkit {
namespace {

template <typename T>
T allowed_or_first(T own, const std::vector<T>& declared, const std::vector<T>& contract) {
  const std::vector<T>& allowed = declared.empty() ? contract : declared;
  return std::find(allowed.begin(), allowed.end(), own) != allowed.end() ? own : allowed.front();
}

// The case's indices as `dtype`; false when a value does not fit int32.
bool convert_indices(const StoreCase& from, DType dtype, StoreCase& to) {
  if (from.indices.meta.dtype == dtype) return true;
  const std::int64_t n = from.num_rows();
  if (dtype == DType::kI32) {
    std::vector<std::int32_t> narrow;
    for (std::int64_t t = 0; t < n; ++t) {
      const std::int64_t v = from.index(t);
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) return false;
      narrow.push_back(static_cast<std::int32_t>(v));
    }
    to.indices = make_tensor_from(DType::kI32, narrow, {n});
  } else {
    std::vector<std::int64_t> wide;
    for (std::int64_t t = 0; t < n; ++t) wide.push_back(from.index(t));
    to.indices = make_tensor_from(DType::kI64, wide, {n});
  }
  return true;
}

}  // namespace

DeclaredStoreLayout in_declared_layout(const StoreCase& c, const abi::GeometryLimits& limits) {
  if (!abi::store_limit_breach(c, limits)) return {c, false, {}};
  const RecordLayout& l = layout_of(store_format(c));
  StoreCase out = c;
  const int rank = allowed_or_first(c.cache.rank(), limits.cache_ranks, {2, 3});
  std::int64_t stride = c.cache.strides.empty() ? 0 : c.cache.strides.front();
  if (limits.page_stride != abi::PageStrideRule::kAny) {
    const std::optional<std::int64_t> declared = abi::declared_page_stride(limits, c.block_size, l.record_bytes());
    if (!declared) return {std::nullopt, false, abi::store_limit_breach(c, limits)->text};
    stride = *declared;
  }
  const std::int64_t pages = c.cache.rank() >= 1 ? c.cache.size(0) : 0;
  if (rank == 2) {
    out.cache.sizes = {pages, stride};
    out.cache.strides = {stride, 1};
  } else {
    out.cache.sizes = {pages, c.block_size, l.record_width};
    out.cache.strides = {stride, l.record_width, 1};
  }
  const DType index = allowed_or_first(c.indices.meta.dtype, limits.index_dtypes, {DType::kI32, DType::kI64});
  if (!convert_indices(c, index, out))
    return {std::nullopt, false, "the indices do not fit int32, the only index dtype the library declares"};
  if (const std::optional<abi::LimitBreach> b = abi::store_limit_breach(out, limits))
    return {std::nullopt, false, b->text};
  if (const Status s = validate_store_rotated(out, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok())
    return {std::nullopt, false,
            "in the library's layout (" + store_layout_name(out) + ") the case breaks a rule: " + s.ToString()};
  return {out, true, {}};
}

std::string store_layout_name(const StoreCase& c) {
  const std::string stride = c.cache.strides.empty() ? "?" : std::to_string(c.cache.strides.front());
  return std::to_string(c.cache.rank()) + "-D cache, page stride " + stride + " B, " +
         abi::index_dtype_name(c.indices.meta.dtype) + " indices";
}

}  // namespace kvc::testkit
