// capabilities.h: what a library declares since ABI 1.2 beyond support and profile, in the
// contract's vocabulary: the geometry it accepts for an (op, format, kv dtype) (page stride rule,
// block sizes, cache ranks, index dtypes) and the validation codes it enforces itself
// (kvc_op_support's fields from page_stride_rule on, kvc/kernel_abi.h).
//
// The suite reads them (read_capabilities) to build each case in the library's own layout and to
// report the rest skipped, naming the limit, instead of failing on a 402; a library writes them
// with CapabilityDeclaration (op_support.h). 0 in every field is "whatever the contract allows",
// so a library built against 1.0 or 1.1 (or a struct_size that stops before a field) declares no
// limits and every validation code.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kvc/contract.h"
#include "kvc/kernel_abi.h"
#include "kvc/status.h"

namespace kvc::abi {

// The first ABI version with the capability fields, and with the fused kv_norm support query
// (KVC_OP_KV_ONLY_INSERT_KV_NORM): 1.2.
inline constexpr std::int32_t kAbiVersionWithCapabilities = 1002;

// kvc_page_stride_rule: which page strides (stride(0) in bytes) the library accepts.
enum class PageStrideRule : std::uint8_t {
  kAny = KVC_PAGE_STRIDE_ANY,               // any the contract allows
  kAlignedUp = KVC_PAGE_STRIDE_ALIGNED_UP,  // exactly ceil(bs * record bytes / align) * align
  kDense = KVC_PAGE_STRIDE_DENSE,           // exactly bs * record bytes
};

// kvc_block_size_rule: which block sizes the library accepts.
enum class BlockSizeRule : std::uint8_t {
  kAny = KVC_BLOCK_SIZE_ANY,
  kPowerOfTwo = KVC_BLOCK_SIZE_POWER_OF_TWO,
  kListed = KVC_BLOCK_SIZE_LISTED,  // one of GeometryLimits::block_sizes
};

// kvc_validation_scope: which validation codes the library returns itself.
enum class ValidationScope : std::uint8_t {
  kAll = KVC_VALIDATION_ALL,        // every code of the contract that applies to the op
  kListed = KVC_VALIDATION_LISTED,  // ValidationDeclaration::enforced only
  kNone = KVC_VALIDATION_NONE,      // none: a rule-breaking call is the caller's fault
};

// The geometry a library accepts. Empty lists mean the contract's choices for the op (the insert
// ops: a 3-D cache and int64 slot_mapping; the store op: 2-D or 3-D, int32 or int64 indices).
struct GeometryLimits {
  PageStrideRule page_stride = PageStrideRule::kAny;
  std::int64_t page_stride_align = 0;  // bytes, > 0 with kAlignedUp; 0 otherwise
  BlockSizeRule block_size = BlockSizeRule::kAny;
  std::vector<std::int64_t> block_sizes;  // kListed only: positive, at least one
  std::vector<int> cache_ranks;           // subset of {2, 3}, ascending
  std::vector<DType> index_dtypes;        // subset of {kI32, kI64}, in that order

  bool operator==(const GeometryLimits& o) const {
    return page_stride == o.page_stride && page_stride_align == o.page_stride_align && block_size == o.block_size &&
           block_sizes == o.block_sizes && cache_ranks == o.cache_ranks && index_dtypes == o.index_dtypes;
  }
  bool operator!=(const GeometryLimits& o) const { return !(*this == o); }
};

// The validation a library does itself.
struct ValidationDeclaration {
  ValidationScope scope = ValidationScope::kAll;
  std::vector<ErrorCode> enforced;  // kListed only: 1xx and 2xx codes

  // Whether the library declares it returns `code` for a call that breaks that rule alone.
  bool enforces(ErrorCode code) const;

  bool operator==(const ValidationDeclaration& o) const { return scope == o.scope && enforced == o.enforced; }
  bool operator!=(const ValidationDeclaration& o) const { return !(*this == o); }
};

struct Capabilities {
  GeometryLimits limits;
  ValidationDeclaration validation;
};

// A capability field no alternative of kvc/kernel_abi.h names (a library bug: the suite cannot
// tell which cases the library takes). The message names the field and its value.
class CapabilityError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The bounds a list may have; a longer one is refused as a library bug rather than read.
inline constexpr std::int32_t kMaxListedBlockSizes = 64;
inline constexpr std::int32_t kMaxEnforcedCodes = 256;

// The capabilities of one kvc_op_support answer: none (no limits, every code) for a library built
// before 1.2; otherwise each field the struct's struct_size covers, decoded. Throws CapabilityError
// naming the field for a value outside its enum, a malformed list or a code that is no 1xx/2xx
// validation code.
Capabilities read_capabilities(const kvc_op_support& s, std::int32_t library_abi_version);

// "int32", "int64", or the dtype's name: how limit messages name an index dtype.
const char* index_dtype_name(DType t);

}  // namespace kvc::abi
