// capabilities.cpp: kvc_op_support's 1.2 fields read into the contract's vocabulary (see
// capabilities.h).
#include "kvc/abi/capabilities.h"

#include <algorithm>
#include <string>

#include "kvc/abi/struct_size.h"

namespace kvc::abi {
namespace {

// The two enums are numbered by the header's constants; a renumbering on either side must fail
// to compile here rather than decode one rule as another.
static_assert(static_cast<int>(PageStrideRule::kDense) == KVC_PAGE_STRIDE_DENSE, "kvc_page_stride_rule");
static_assert(static_cast<int>(BlockSizeRule::kListed) == KVC_BLOCK_SIZE_LISTED, "kvc_block_size_rule");
static_assert(static_cast<int>(ValidationScope::kNone) == KVC_VALIDATION_NONE, "kvc_validation_scope");

constexpr std::uint32_t kRankBits = KVC_CACHE_RANK_2 | KVC_CACHE_RANK_3;
constexpr std::uint32_t kIndexBits = KVC_INDEX_INT32 | KVC_INDEX_INT64;

std::string field(const char* name) { return std::string("kvc_op_support.") + name; }

[[noreturn]] void refuse(const char* name, long long value, const std::string& why) {
  throw CapabilityError(field(name) + " = " + std::to_string(value) + " " + why + " (kvc/kernel_abi.h)");
}

// The value of a field the caller's struct_size covers, else 0 ("the contract's").
template <typename T>
T covered_or_zero(const kvc_op_support& s, std::size_t end_of_field, T value) {
  return s.struct_size >= end_of_field ? value : T{};
}
#define KVC_COVERED(s, name) covered_or_zero((s), KVC_ABI_END_OF(kvc_op_support, name), (s).name)

PageStrideRule page_stride_rule(std::int32_t v) {
  switch (v) {
    case KVC_PAGE_STRIDE_ANY: return PageStrideRule::kAny;
    case KVC_PAGE_STRIDE_ALIGNED_UP: return PageStrideRule::kAlignedUp;
    case KVC_PAGE_STRIDE_DENSE: return PageStrideRule::kDense;
  }
  refuse("page_stride_rule", v, "names no kvc_page_stride_rule (0 any, 1 aligned up, 2 dense)");
}

BlockSizeRule block_size_rule(std::int32_t v) {
  switch (v) {
    case KVC_BLOCK_SIZE_ANY: return BlockSizeRule::kAny;
    case KVC_BLOCK_SIZE_POWER_OF_TWO: return BlockSizeRule::kPowerOfTwo;
    case KVC_BLOCK_SIZE_LISTED: return BlockSizeRule::kListed;
  }
  refuse("block_size_rule", v, "names no kvc_block_size_rule (0 any, 1 powers of two, 2 listed)");
}

ValidationScope validation_scope(std::int32_t v) {
  switch (v) {
    case KVC_VALIDATION_ALL: return ValidationScope::kAll;
    case KVC_VALIDATION_LISTED: return ValidationScope::kListed;
    case KVC_VALIDATION_NONE: return ValidationScope::kNone;
  }
  refuse("validation", v, "names no kvc_validation_scope (0 all, 1 listed, 2 none)");
}

// A list's length: 1..max (0 allowed when `may_be_empty`), and a pointer to read it from.
void check_list(const char* count_name, std::int32_t count, const void* items, const char* items_name, std::int32_t max,
                bool may_be_empty) {
  if (count < 0 || count > max || (count == 0 && !may_be_empty))
    refuse(count_name, count,
           "is no list length (" + std::string(may_be_empty ? "0" : "1") + ".." + std::to_string(max) + ")");
  if (count > 0 && items == nullptr)
    refuse(count_name, count, std::string("entries but ") + field(items_name) + " is NULL");
}

GeometryLimits read_limits(const kvc_op_support& s) {
  GeometryLimits l;
  l.page_stride = page_stride_rule(KVC_COVERED(s, page_stride_rule));
  if (l.page_stride == PageStrideRule::kAlignedUp) {
    const std::int32_t align = KVC_COVERED(s, page_stride_align);
    if (align <= 0)
      refuse("page_stride_align", align, "with KVC_PAGE_STRIDE_ALIGNED_UP: the alignment must be > 0 bytes");
    l.page_stride_align = align;
  }
  l.block_size = block_size_rule(KVC_COVERED(s, block_size_rule));
  if (l.block_size == BlockSizeRule::kListed) {
    const std::int32_t count = s.struct_size >= KVC_ABI_END_OF(kvc_op_support, block_sizes) ? s.block_size_count : 0;
    const std::int64_t* sizes = KVC_COVERED(s, block_sizes);
    check_list("block_size_count", count, sizes, "block_sizes", kMaxListedBlockSizes, false);
    for (std::int32_t i = 0; i < count; ++i) {
      if (sizes[i] <= 0)
        throw CapabilityError(field("block_sizes") + "[" + std::to_string(i) + "] = " + std::to_string(sizes[i]) +
                              " is no block size (> 0)");
      l.block_sizes.push_back(sizes[i]);
    }
  }
  const std::uint32_t ranks = KVC_COVERED(s, cache_ranks);
  if ((ranks & ~kRankBits) != 0)
    refuse("cache_ranks", ranks, "sets bits no KVC_CACHE_RANK_* names (KVC_CACHE_RANK_2 | KVC_CACHE_RANK_3)");
  for (int rank : {2, 3})
    if ((ranks & (1u << rank)) != 0) l.cache_ranks.push_back(rank);
  const std::uint32_t indices = KVC_COVERED(s, index_dtypes);
  if ((indices & ~kIndexBits) != 0)
    refuse("index_dtypes", indices, "sets bits no KVC_INDEX_* names (KVC_INDEX_INT32 | KVC_INDEX_INT64)");
  if ((indices & KVC_INDEX_INT32) != 0) l.index_dtypes.push_back(DType::kI32);
  if ((indices & KVC_INDEX_INT64) != 0) l.index_dtypes.push_back(DType::kI64);
  return l;
}

bool is_validation_code(int number, ErrorCode* code) {
  return number >= 100 && number < 300 && error_code_from_number(number, code);
}

ValidationDeclaration read_validation(const kvc_op_support& s) {
  ValidationDeclaration v;
  v.scope = validation_scope(KVC_COVERED(s, validation));
  if (v.scope != ValidationScope::kListed) return v;
  const std::int32_t count =
      s.struct_size >= KVC_ABI_END_OF(kvc_op_support, enforced_codes) ? s.enforced_code_count : 0;
  const std::int32_t* codes = KVC_COVERED(s, enforced_codes);
  check_list("enforced_code_count", count, codes, "enforced_codes", kMaxEnforcedCodes, true);
  for (std::int32_t i = 0; i < count; ++i) {
    ErrorCode code{};
    if (!is_validation_code(codes[i], &code))
      throw CapabilityError(field("enforced_codes") + "[" + std::to_string(i) + "] = " + std::to_string(codes[i]) +
                            " is no validation code (a 1xx or 2xx code of docs/contract.md §5)");
    v.enforced.push_back(code);
  }
  return v;
}

#undef KVC_COVERED

}  // namespace

bool ValidationDeclaration::enforces(ErrorCode code) const {
  switch (scope) {
    case ValidationScope::kAll: return true;
    case ValidationScope::kNone: return false;
    case ValidationScope::kListed: return std::find(enforced.begin(), enforced.end(), code) != enforced.end();
  }
  return true;
}

Capabilities read_capabilities(const kvc_op_support& s, std::int32_t library_abi_version) {
  if (library_abi_version < kAbiVersionWithCapabilities) return {};
  return {read_limits(s), read_validation(s)};
}

const char* index_dtype_name(DType t) {
  switch (t) {
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kBF16: return "bfloat16";
    case DType::kF16: return "float16";
    case DType::kF32: return "float32";
    case DType::kU8: return "uint8";
    case DType::kE4M3: return "float8_e4m3fn";
  }
  return "an unknown dtype";
}

}  // namespace kvc::abi
