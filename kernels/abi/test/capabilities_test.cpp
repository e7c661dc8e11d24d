// capabilities_test.cpp: kvc_op_support's 1.2 capability fields read (read_capabilities) and
// written (CapabilityDeclaration), kvc/abi/capabilities.h and op_support.h.
// Catches: a field decoded from another member or another enum value (SGLang's aligned-up stride
// read as dense would skip every case it takes); a library built before 1.2, or a struct_size
// that stops before a field, read as declaring limits (stale bytes would skip or fail its cases);
// a value outside an enum, a malformed list or a non-validation code accepted silently instead of
// refused naming the field; a writer that writes past the caller's struct_size, or whose arrays
// do not point at what it declared.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kvc/abi/capabilities.h"
#include "kvc/abi/op_support.h"
#include "kvc/abi/struct_size.h"

namespace kvc::abi {
namespace {

constexpr std::int32_t kAbi11 = 1001, kAbi12 = 1002;

kvc_op_support zeroed() {
  kvc_op_support s{};
  s.struct_size = sizeof s;
  s.supported = 1;
  return s;
}

// SGLang's store geometry, as the header's comments describe it.
kvc_op_support sglang_store_fields() {
  kvc_op_support s = zeroed();
  s.page_stride_rule = KVC_PAGE_STRIDE_ALIGNED_UP;
  s.page_stride_align = 576;
  s.block_size_rule = KVC_BLOCK_SIZE_POWER_OF_TWO;
  s.cache_ranks = KVC_CACHE_RANK_2;
  s.index_dtypes = KVC_INDEX_INT32 | KVC_INDEX_INT64;
  s.validation = KVC_VALIDATION_NONE;
  return s;
}

// The CapabilityError message read_capabilities throws, or "" when it accepts the struct.
std::string refusal(const kvc_op_support& s) {
  try {
    (void)read_capabilities(s, kAbi12);
  } catch (const CapabilityError& e) {
    return e.what();
  }
  return "";
}

TEST(AbiCapabilities, AZeroedStructDeclaresNoLimitsAndEveryCode) {
  const Capabilities c = read_capabilities(zeroed(), kAbi12);
  EXPECT_EQ(c.limits, GeometryLimits{});
  EXPECT_EQ(c.validation.scope, ValidationScope::kAll);
  EXPECT_TRUE(c.validation.enforces(ErrorCode::kSlotOutOfRange));
}

TEST(AbiCapabilities, EveryFieldIsReadAsDeclared) {
  const Capabilities sglang = read_capabilities(sglang_store_fields(), kAbi12);
  EXPECT_EQ(sglang.limits.page_stride, PageStrideRule::kAlignedUp);
  EXPECT_EQ(sglang.limits.page_stride_align, 576);
  EXPECT_EQ(sglang.limits.block_size, BlockSizeRule::kPowerOfTwo);
  EXPECT_TRUE(sglang.limits.block_sizes.empty());
  EXPECT_EQ(sglang.limits.cache_ranks, std::vector<int>({2}));
  EXPECT_EQ(sglang.limits.index_dtypes, std::vector<DType>({DType::kI32, DType::kI64}));
  EXPECT_EQ(sglang.validation.scope, ValidationScope::kNone);
  EXPECT_FALSE(sglang.validation.enforces(ErrorCode::kSlotOutOfRange));

  static const std::int64_t sizes[] = {16, 64};
  static const std::int32_t codes[] = {201, 203};
  kvc_op_support s = zeroed();
  s.page_stride_rule = KVC_PAGE_STRIDE_DENSE;
  s.page_stride_align = 99;  // ignored: not the aligned-up rule
  s.block_size_rule = KVC_BLOCK_SIZE_LISTED;
  s.block_size_count = 2;
  s.block_sizes = sizes;
  s.cache_ranks = KVC_CACHE_RANK_2 | KVC_CACHE_RANK_3;
  s.index_dtypes = KVC_INDEX_INT64;
  s.validation = KVC_VALIDATION_LISTED;
  s.enforced_code_count = 2;
  s.enforced_codes = codes;
  const Capabilities listed = read_capabilities(s, kAbi12);
  EXPECT_EQ(listed.limits.page_stride, PageStrideRule::kDense);
  EXPECT_EQ(listed.limits.page_stride_align, 0);
  EXPECT_EQ(listed.limits.block_size, BlockSizeRule::kListed);
  EXPECT_EQ(listed.limits.block_sizes, std::vector<std::int64_t>({16, 64}));
  EXPECT_EQ(listed.limits.cache_ranks, std::vector<int>({2, 3}));
  EXPECT_EQ(listed.limits.index_dtypes, std::vector<DType>({DType::kI64}));
  EXPECT_EQ(listed.validation.scope, ValidationScope::kListed);
  EXPECT_EQ(listed.validation.enforced,
            std::vector<ErrorCode>({ErrorCode::kPageStrideBelowDense, ErrorCode::kSlotOutOfRange}));
  EXPECT_TRUE(listed.validation.enforces(ErrorCode::kSlotOutOfRange));
  EXPECT_FALSE(listed.validation.enforces(ErrorCode::kDuplicateSlot));
}

TEST(AbiCapabilities, ALibraryBuiltBefore12DeclaresNothingWhateverTheBytes) {
  kvc_op_support s = sglang_store_fields();
  s.page_stride_rule = 77;  // stale bytes a 1.1 library never wrote would be refused if read
  const Capabilities c = read_capabilities(s, kAbi11);
  EXPECT_EQ(c.limits, GeometryLimits{});
  EXPECT_EQ(c.validation, ValidationDeclaration{});
}

TEST(AbiCapabilities, FieldsPastTheStructSizeAreNotRead) {
  kvc_op_support s = sglang_store_fields();
  s.struct_size = static_cast<std::uint32_t>(offsetof(kvc_op_support, page_stride_rule));  // a 1.1 caller
  EXPECT_EQ(read_capabilities(s, kAbi12).limits, GeometryLimits{});

  s.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, index_dtypes));  // no validation
  const Capabilities c = read_capabilities(s, kAbi12);
  EXPECT_EQ(c.limits.page_stride, PageStrideRule::kAlignedUp);
  EXPECT_EQ(c.limits.cache_ranks, std::vector<int>({2}));
  EXPECT_EQ(c.validation.scope, ValidationScope::kAll);
}

TEST(AbiCapabilities, ValuesOutsideTheirEnumsAreRefusedNamingTheField) {
  static const std::int64_t bad_sizes[] = {16, -4};
  static const std::int32_t harness_code[] = {301};
  static const std::int32_t unknown_code[] = {203, 999};
  const struct {
    const char* what;
    void (*plant)(kvc_op_support&);
    const char* message;
  } planted[] = {
      {"page stride rule 3", [](kvc_op_support& s) { s.page_stride_rule = 3; }, "kvc_op_support.page_stride_rule = 3"},
      {"aligned up to 0 bytes", [](kvc_op_support& s) { s.page_stride_align = 0; },
       "kvc_op_support.page_stride_align = 0"},
      {"block size rule -1", [](kvc_op_support& s) { s.block_size_rule = -1; }, "kvc_op_support.block_size_rule = -1"},
      {"an empty list", [](kvc_op_support& s) { s.block_size_rule = KVC_BLOCK_SIZE_LISTED; },
       "kvc_op_support.block_size_count = 0"},
      {"a list without entries",
       [](kvc_op_support& s) {
         s.block_size_rule = KVC_BLOCK_SIZE_LISTED;
         s.block_size_count = 2;
       },
       "kvc_op_support.block_sizes is NULL"},
      {"a negative block size",
       [](kvc_op_support& s) {
         s.block_size_rule = KVC_BLOCK_SIZE_LISTED;
         s.block_size_count = 2;
         s.block_sizes = bad_sizes;
       },
       "kvc_op_support.block_sizes[1] = -4"},
      {"a rank bit for 4-D", [](kvc_op_support& s) { s.cache_ranks |= 1u << 4; }, "kvc_op_support.cache_ranks = 20"},
      {"an index bit for int16", [](kvc_op_support& s) { s.index_dtypes = 4; }, "kvc_op_support.index_dtypes = 4"},
      {"validation scope 3", [](kvc_op_support& s) { s.validation = 3; }, "kvc_op_support.validation = 3"},
      {"a negative code count",
       [](kvc_op_support& s) {
         s.validation = KVC_VALIDATION_LISTED;
         s.enforced_code_count = -1;
       },
       "kvc_op_support.enforced_code_count = -1"},
      {"a harness code",
       [](kvc_op_support& s) {
         s.validation = KVC_VALIDATION_LISTED;
         s.enforced_code_count = 1;
         s.enforced_codes = harness_code;
       },
       "kvc_op_support.enforced_codes[0] = 301"},
      {"an unknown code",
       [](kvc_op_support& s) {
         s.validation = KVC_VALIDATION_LISTED;
         s.enforced_code_count = 2;
         s.enforced_codes = unknown_code;
       },
       "kvc_op_support.enforced_codes[1] = 999"},
  };
  ASSERT_EQ(refusal(sglang_store_fields()), "") << "the unplanted struct must be readable";
  for (const auto& p : planted) {
    kvc_op_support s = sglang_store_fields();
    p.plant(s);
    const std::string message = refusal(s);
    EXPECT_NE(message.find(p.message), std::string::npos) << p.what << ": got \"" << message << "\"";
  }
}

TEST(AbiCapabilities, ListedWithNoCodesEnforcesNothing) {
  kvc_op_support s = zeroed();
  s.validation = KVC_VALIDATION_LISTED;
  const Capabilities c = read_capabilities(s, kAbi12);
  EXPECT_EQ(c.validation.scope, ValidationScope::kListed);
  EXPECT_FALSE(c.validation.enforces(ErrorCode::kKvDtype));
}

// ---- the writer ---------------------------------------------------------------------------------

Capabilities sglang_store() {
  Capabilities c;
  c.limits.page_stride = PageStrideRule::kAlignedUp;
  c.limits.page_stride_align = 576;
  c.limits.block_size = BlockSizeRule::kPowerOfTwo;
  c.limits.cache_ranks = {2};
  c.limits.index_dtypes = {DType::kI32, DType::kI64};
  c.validation.scope = ValidationScope::kNone;
  return c;
}

Capabilities listed() {
  Capabilities c;
  c.limits.page_stride = PageStrideRule::kDense;
  c.limits.block_size = BlockSizeRule::kListed;
  c.limits.block_sizes = {64, 256};
  c.limits.cache_ranks = {3};
  c.limits.index_dtypes = {DType::kI64};
  c.validation.scope = ValidationScope::kListed;
  c.validation.enforced = {ErrorCode::kKvDtype, ErrorCode::kMisaligned};
  return c;
}

TEST(AbiCapabilityDeclaration, WhatIsWrittenReadsBackAsDeclared) {
  for (const Capabilities& declared : {Capabilities{}, sglang_store(), listed()}) {
    const CapabilityDeclaration d(declared);
    kvc_op_support s = zeroed();
    s.page_stride_rule = 2;  // a previous answer's bytes: the writer overwrites every field
    s.validation = 1;
    d.declare(&s);
    const Capabilities read = read_capabilities(s, kAbi12);
    EXPECT_EQ(read.limits, declared.limits);
    EXPECT_EQ(read.validation, declared.validation);
  }
}

TEST(AbiCapabilityDeclaration, NothingIsWrittenPastTheCallersStructSize) {
  const CapabilityDeclaration d(sglang_store());
  kvc_op_support s{};
  s.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, amax_floor));  // a 1.1 caller
  s.page_stride_rule = -7;
  s.validation = -7;
  d.declare(&s);
  EXPECT_EQ(s.page_stride_rule, -7);
  EXPECT_EQ(s.validation, -7);

  s.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, index_dtypes));
  d.declare(&s);
  EXPECT_EQ(s.page_stride_rule, KVC_PAGE_STRIDE_ALIGNED_UP);
  EXPECT_EQ(s.cache_ranks, KVC_CACHE_RANK_2);
  EXPECT_EQ(s.validation, -7) << "validation lies past this struct_size";
}

TEST(AbiCapabilityDeclaration, WhatTheStructCannotSayIsRefused) {
  const auto refused = [](void (*plant)(Capabilities&)) {
    Capabilities c;
    plant(c);
    try {
      CapabilityDeclaration d(c);
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused([](Capabilities& c) { c.limits.cache_ranks = {4}; }));
  EXPECT_TRUE(refused([](Capabilities& c) { c.limits.index_dtypes = {DType::kF32}; }));
  EXPECT_TRUE(refused([](Capabilities& c) { c.limits.page_stride = PageStrideRule::kAlignedUp; }));
  EXPECT_TRUE(refused([](Capabilities& c) { c.limits.block_size = BlockSizeRule::kListed; }));
  EXPECT_TRUE(refused([](Capabilities& c) {
    c.limits.block_size = BlockSizeRule::kListed;
    c.limits.block_sizes = {0};
  }));
  EXPECT_TRUE(refused([](Capabilities& c) { c.validation.enforced = {ErrorCode::kBackingTooSmall}; }));
  EXPECT_FALSE(refused([](Capabilities& c) { c = listed(); }));
}

}  // namespace
}  // namespace kvc::abi
