// limit_breach_test.cpp: which declared limit a case breaks, and the words a skip prints
// (kvc/abi/limit_breach.h).
// Catches: a case inside the limits reported outside them (SGLang's own 2-D cache skipped, so its
// store kernel is never checked); a case outside them reported inside (the library answers 402
// and the suite fails it); the wrong limit named, or a number in the message that is not the
// case's or the declared one; an empty list that limits anything (a rule breaker outside the
// contract taken for a limit when the library declared none: its validation code would never be
// checked); hostile metadata read out of bounds or overflowing.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kvc/abi/limit_breach.h"

namespace kvc::abi {
namespace {

// SGLang's flashmla store: ceil(584 * bs / 576) * 576 bytes a page, bs a power of two, 2-D.
GeometryLimits sglang_store() {
  GeometryLimits l;
  l.page_stride = PageStrideRule::kAlignedUp;
  l.page_stride_align = 576;
  l.block_size = BlockSizeRule::kPowerOfTwo;
  l.cache_ranks = {2};
  l.index_dtypes = {DType::kI32, DType::kI64};
  return l;
}

// A packed584 store case of 4 pages: SGLang's 2-D cache (rank 2) or ours (rank 3).
StoreCase store_case(int rank, std::int64_t block_size, std::int64_t page_stride, DType index_dtype) {
  StoreCase c;
  c.indices.meta.dtype = index_dtype;
  c.indices.meta.sizes = {1};
  c.indices.meta.strides = {1};
  c.cache.dtype = DType::kU8;
  if (rank == 2) {
    c.cache.sizes = {4, page_stride};
    c.cache.strides = {page_stride, 1};
  } else {
    c.cache.sizes = {4, block_size, 584};
    c.cache.strides = {page_stride, 584, 1};
  }
  c.block_size = block_size;
  return c;
}

// A KV-only insert case on a 3-D cache of `format`.
InsertCase insert_case(RecordFormat format, std::int64_t block_size, std::int64_t page_stride_bytes) {
  InsertCase c;
  c.slots.meta.dtype = DType::kI64;
  const RecordLayout& l = layout_of(format);
  c.cache.dtype = l.cache_dtype;
  c.cache.rank = 3;
  c.cache.num_blocks = 4;
  c.cache.block_size = block_size;
  c.cache.width = l.record_width;
  c.cache.stride0 = page_stride_bytes / dtype_size(l.cache_dtype);
  c.cache.stride1 = l.record_width;
  c.block_size = block_size;
  c.kv_mxfp8 = l.kv_mxfp8;
  return c;
}

std::string text_of(const std::optional<LimitBreach>& b) { return b ? b->text : "(inside the limits)"; }

TEST(AbiLimitBreach, SglangsOwnCacheIsInsideItsLimits) {
  for (std::int64_t bs : {1, 16, 64, 256}) {
    const std::int64_t stride = sglang_page_stride_bytes(RecordFormat::kPacked584, bs);
    for (DType index : {DType::kI32, DType::kI64})
      EXPECT_EQ(store_limit_breach(store_case(2, bs, stride, index), sglang_store()), std::nullopt)
          << "bs " << bs << ", " << index_dtype_name(index);
  }
}

TEST(AbiLimitBreach, NoLimitsTakeEveryLayoutTheContractAllows) {
  const GeometryLimits none;
  EXPECT_EQ(store_limit_breach(store_case(3, 48, 48 * 584 + 64, DType::kI64), none), std::nullopt);
  EXPECT_EQ(store_limit_breach(store_case(2, 48, 48 * 584, DType::kI32), none), std::nullopt);
  EXPECT_EQ(insert_limit_breach(insert_case(RecordFormat::kFp8_512, 48, 48 * 512 + 32), none), std::nullopt);
}

TEST(AbiLimitBreach, EachLimitIsNamedWithTheCasesValueAndTheDeclaredOne) {
  const GeometryLimits l = sglang_store();
  const std::int64_t stride16 = sglang_page_stride_bytes(RecordFormat::kPacked584, 16);  // 9792
  ASSERT_EQ(stride16, 9792);

  const auto bs48 = store_limit_breach(store_case(2, 48, 48 * 584, DType::kI32), l);
  ASSERT_TRUE(bs48.has_value());
  EXPECT_EQ(bs48->limit, Limit::kBlockSize);
  EXPECT_EQ(bs48->text, "block size 48 is not a power of two (the library declares powers of two only)");

  const auto dense = store_limit_breach(store_case(2, 16, 9344, DType::kI64), l);
  ASSERT_TRUE(dense.has_value());
  EXPECT_EQ(dense->limit, Limit::kPageStride);
  EXPECT_EQ(dense->text, "page stride 9344 B: the library declares exactly ceil(bs * 584 / 576) * 576 = 9792 B");

  const auto ours = store_limit_breach(store_case(3, 16, stride16, DType::kI64), l);
  ASSERT_TRUE(ours.has_value());
  EXPECT_EQ(ours->limit, Limit::kCacheRank);
  EXPECT_EQ(ours->text, "a 3-D cache: the library declares 2-D caches only");

  GeometryLimits int64_only = l;
  int64_only.index_dtypes = {DType::kI64};
  const auto narrow = store_limit_breach(store_case(2, 16, stride16, DType::kI32), int64_only);
  ASSERT_TRUE(narrow.has_value());
  EXPECT_EQ(narrow->limit, Limit::kIndexDtype);
  EXPECT_EQ(narrow->text, "int32 indices: the library declares int64 indices only");

  const auto float_indices = store_limit_breach(store_case(2, 16, stride16, DType::kF32), l);
  EXPECT_EQ(text_of(float_indices), "float32 indices: the library declares int32 and int64 indices only");
}

TEST(AbiLimitBreach, TheFirstLimitInCheckingOrderIsNamed) {
  // int32 indices, a 3-D cache, block size 48 and a dense stride: every limit broken at once.
  GeometryLimits l = sglang_store();
  l.index_dtypes = {DType::kI64};
  EXPECT_EQ(store_limit_breach(store_case(3, 48, 48 * 584, DType::kI32), l)->limit, Limit::kIndexDtype);
  EXPECT_EQ(store_limit_breach(store_case(3, 48, 48 * 584, DType::kI64), l)->limit, Limit::kCacheRank);
  EXPECT_EQ(store_limit_breach(store_case(2, 48, 48 * 584, DType::kI64), l)->limit, Limit::kBlockSize);
  EXPECT_EQ(store_limit_breach(store_case(2, 32, 32 * 584, DType::kI64), l)->limit, Limit::kPageStride);
}

TEST(AbiLimitBreach, DenseAndListedRules) {
  GeometryLimits l;
  l.page_stride = PageStrideRule::kDense;
  l.block_size = BlockSizeRule::kListed;
  l.block_sizes = {16, 64};
  EXPECT_EQ(insert_limit_breach(insert_case(RecordFormat::kPacked584, 16, 9344), l), std::nullopt);
  EXPECT_EQ(text_of(insert_limit_breach(insert_case(RecordFormat::kPacked584, 16, 9792), l)),
            "page stride 9792 B: the library declares exactly bs * 584 = 9344 B (dense pages)");
  EXPECT_EQ(text_of(insert_limit_breach(insert_case(RecordFormat::kPacked584, 48, 48 * 584), l)),
            "block size 48 is not listed (the library declares block sizes 16 and 64 only)");
  // Full caches: a record is the row, 1024 bytes for bf16_512.
  EXPECT_EQ(insert_limit_breach(insert_case(RecordFormat::kBf16_512, 64, 64 * 1024), l), std::nullopt);
  EXPECT_EQ(text_of(insert_limit_breach(insert_case(RecordFormat::kBf16_512, 64, 64 * 1024 + 64), l)),
            "page stride 65600 B: the library declares exactly bs * 1024 = 65536 B (dense pages)");
}

TEST(AbiLimitBreach, EmptyListsLimitNothing) {
  GeometryLimits any_geometry;  // no rank or index list: each op's contract, which validation enforces
  EXPECT_EQ(insert_limit_breach(insert_case(RecordFormat::kPacked528, 16, 16 * 528), any_geometry), std::nullopt);
  EXPECT_EQ(store_limit_breach(store_case(2, 16, 9792, DType::kI32), any_geometry), std::nullopt);
  // Outside the contract is a rule breaker (131, 111, 134), answered with its code, not 402.
  EXPECT_EQ(store_limit_breach(store_case(2, 16, 9792, DType::kF32), any_geometry), std::nullopt);
  InsertCase int32_slots = insert_case(RecordFormat::kPacked584, 16, 9344);
  int32_slots.slots.meta.dtype = DType::kI32;
  EXPECT_EQ(insert_limit_breach(int32_slots, any_geometry), std::nullopt);
  StoreCase rank4 = store_case(3, 16, 9792, DType::kI64);
  rank4.cache.sizes.push_back(1);
  rank4.cache.strides.push_back(1);
  EXPECT_EQ(store_limit_breach(rank4, any_geometry), std::nullopt);

  GeometryLimits int32_only;
  int32_only.index_dtypes = {DType::kI32};
  EXPECT_EQ(text_of(insert_limit_breach(insert_case(RecordFormat::kPacked584, 16, 9344), int32_only)),
            "int64 slot_mapping: the library declares int32 indices only");
  GeometryLimits two_d_only;
  two_d_only.cache_ranks = {2};
  EXPECT_EQ(text_of(insert_limit_breach(insert_case(RecordFormat::kFp8_512, 16, 16 * 512), two_d_only)),
            "a 3-D cache: the library declares 2-D caches only");
}

TEST(AbiLimitBreach, HostileMetadataIsJudgedWithoutReadingPastIt) {
  const GeometryLimits l = sglang_store();
  StoreCase no_strides = store_case(2, 16, 9792, DType::kI64);
  no_strides.cache.strides.clear();  // malformed: validation's 129, not a stride limit
  EXPECT_EQ(store_limit_breach(no_strides, l), std::nullopt);
  EXPECT_EQ(text_of(store_limit_breach(store_case(2, 0, 9792, DType::kI64), l)),
            "block size 0 is not a power of two (the library declares powers of two only)");
  const std::int64_t huge = std::int64_t{1} << 61;  // a power of two whose page overflows int64
  EXPECT_EQ(text_of(store_limit_breach(store_case(2, huge, 9792, DType::kI64), l)),
            "page stride 9792 B: the library declares exactly ceil(bs * 584 / 576) * 576, which block size " +
                std::to_string(huge) + " does not give");
  EXPECT_EQ(declared_page_stride(l, huge, 584), std::nullopt);
  EXPECT_EQ(declared_page_stride(l, 16, 584), std::optional<std::int64_t>(9792));
  EXPECT_EQ(declared_page_stride(GeometryLimits{}, 16, 584), std::nullopt) << "kAny names no one stride";
}

}  // namespace
}  // namespace kvc::abi
