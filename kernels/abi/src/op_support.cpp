// op_support.cpp: kvc_op_support's fields from the contract's vocabulary (see op_support.h).
#include "kvc/abi/op_support.h"

#include <stdexcept>
#include <string>

#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/struct_size.h"

namespace kvc::abi {

void declare_policies(const Profile& p, kvc_op_support* out) {
  if (out->struct_size < KVC_ABI_END_OF(kvc_op_support, amax_floor)) return;
  out->rope = abi_policy(p.rope);
  out->clamp_order = abi_policy(p.clamp_order);
  out->inf_block = abi_policy(p.inf_block);
  out->pad_byte = abi_policy(p.pad_byte);
  out->scale_exponent = abi_policy(p.exponent);
  out->amax_floor = abi_policy(p.amax_floor);
}

namespace {

std::uint32_t rank_mask(const std::vector<int>& ranks) {
  std::uint32_t mask = 0;
  for (int r : ranks) {
    if (r != 2 && r != 3) throw std::invalid_argument("a cache rank of " + std::to_string(r) + " (2 or 3 only)");
    mask |= 1u << r;
  }
  return mask;
}

std::uint32_t index_mask(const std::vector<DType>& dtypes) {
  std::uint32_t mask = 0;
  for (DType t : dtypes) {
    if (t == DType::kI32)
      mask |= KVC_INDEX_INT32;
    else if (t == DType::kI64)
      mask |= KVC_INDEX_INT64;
    else
      throw std::invalid_argument(std::string("an index dtype of ") + index_dtype_name(t) + " (int32 or int64 only)");
  }
  return mask;
}

}  // namespace

CapabilityDeclaration::CapabilityDeclaration(Capabilities c) : c_(std::move(c)) {
  const GeometryLimits& l = c_.limits;
  if (l.page_stride == PageStrideRule::kAlignedUp && l.page_stride_align <= 0)
    throw std::invalid_argument("an aligned-up page stride needs an alignment > 0 bytes");
  if (l.page_stride_align > INT32_MAX) throw std::invalid_argument("a page stride alignment past int32");
  if (l.block_size == BlockSizeRule::kListed &&
      (l.block_sizes.empty() || l.block_sizes.size() > static_cast<std::size_t>(kMaxListedBlockSizes)))
    throw std::invalid_argument("a listed block size rule needs 1 to " + std::to_string(kMaxListedBlockSizes) +
                                " block sizes");
  for (std::int64_t bs : l.block_sizes)
    if (bs <= 0) throw std::invalid_argument("a listed block size of " + std::to_string(bs));
  (void)rank_mask(l.cache_ranks);
  (void)index_mask(l.index_dtypes);
  if (c_.validation.enforced.size() > static_cast<std::size_t>(kMaxEnforcedCodes))
    throw std::invalid_argument("more than " + std::to_string(kMaxEnforcedCodes) + " enforced codes");
  for (ErrorCode code : c_.validation.enforced) {
    const int n = status_of(code);
    if (n < 100 || n >= 300)
      throw std::invalid_argument("an enforced code " + std::to_string(n) + " (validation codes are 1xx and 2xx)");
    codes_.push_back(n);
  }
}

void CapabilityDeclaration::declare(kvc_op_support* out) const {
  const GeometryLimits& l = c_.limits;
  const bool listed_sizes = l.block_size == BlockSizeRule::kListed;
  const bool listed_codes = c_.validation.scope == ValidationScope::kListed;
  if (out->struct_size >= KVC_ABI_END_OF(kvc_op_support, page_stride_align)) {
    out->page_stride_rule = static_cast<std::int32_t>(l.page_stride);
    out->page_stride_align =
        l.page_stride == PageStrideRule::kAlignedUp ? static_cast<std::int32_t>(l.page_stride_align) : 0;
  }
  if (out->struct_size >= KVC_ABI_END_OF(kvc_op_support, block_sizes)) {
    out->block_size_rule = static_cast<std::int32_t>(l.block_size);
    out->block_size_count = listed_sizes ? static_cast<std::int32_t>(l.block_sizes.size()) : 0;
    out->block_sizes = listed_sizes ? l.block_sizes.data() : nullptr;
  }
  if (out->struct_size >= KVC_ABI_END_OF(kvc_op_support, index_dtypes)) {
    out->cache_ranks = rank_mask(l.cache_ranks);
    out->index_dtypes = index_mask(l.index_dtypes);
  }
  if (out->struct_size >= KVC_ABI_END_OF(kvc_op_support, enforced_codes)) {
    out->validation = static_cast<std::int32_t>(c_.validation.scope);
    out->enforced_code_count = listed_codes ? static_cast<std::int32_t>(codes_.size()) : 0;
    out->enforced_codes = listed_codes ? codes_.data() : nullptr;
  }
}

}  // namespace kvc::abi
