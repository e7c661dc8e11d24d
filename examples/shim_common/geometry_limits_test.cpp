// geometry_limits_test.cpp: a binding's declared cache geometry (geometry_limits.h), on the CPU.
//
// Catches: a dense or aligned page stride computed from the wrong record size or rounded the wrong
// way (the suite would build every case in a layout the op refuses, or the shim would refuse the
// layout it declared); a block size outside the declared list or not a power of two taken as
// inside; an overflowing page stride taken as inside; and the ABI 1.2 fields declared with another
// rule, alignment or block size list than the config's.
#include <gtest/gtest.h>

#include <limits>

#include "geometry_limits.h"

namespace kvc::shim {
namespace {

TEST(ShimGeometryLimits, NoLimitAcceptsAnyGeometry) {
  const GeometryLimits none;
  EXPECT_EQ(required_page_stride(none, RecordFormat::kPacked584, 16), std::nullopt);
  EXPECT_EQ(outside_limits(none, RecordFormat::kPacked584, 7, 12345), "");
  EXPECT_EQ(outside_limits(none, RecordFormat::kPacked584, 7, std::nullopt), "");
}

TEST(ShimGeometryLimits, DensePagesAreBlockSizeRecords) {
  GeometryLimits l;
  l.page_stride = PageStrideRule::kDense;
  EXPECT_EQ(required_page_stride(l, RecordFormat::kPacked584, 16), 16 * 584);
  EXPECT_EQ(required_page_stride(l, RecordFormat::kPacked528, 64), 64 * 528);
  EXPECT_EQ(required_page_stride(l, RecordFormat::kBf16_512, 16), 16 * 1024);
  EXPECT_EQ(outside_limits(l, RecordFormat::kPacked584, 16, 16 * 584), "");
  const std::string why = outside_limits(l, RecordFormat::kPacked584, 16, 16 * 584 + 32);
  EXPECT_NE(why.find("page stride 9376 B is not the 9344 B of dense pages"), std::string::npos) << why;
  EXPECT_NE(outside_limits(l, RecordFormat::kPacked584, 16, std::nullopt), "") << "an overflowing stride is outside";
}

TEST(ShimGeometryLimits, AlignedPagesRoundUpToTheAlignment) {
  GeometryLimits l;
  l.page_stride = PageStrideRule::kAlignedUp;
  l.page_stride_align = 576;
  // SGLang's store: ceil(584 * 16 / 576) * 576 = 17 * 576.
  EXPECT_EQ(required_page_stride(l, RecordFormat::kPacked584, 16), 17 * 576);
  EXPECT_EQ(required_page_stride(l, RecordFormat::kPacked584, 576), 584 * 576) << "already a multiple";
  EXPECT_EQ(outside_limits(l, RecordFormat::kPacked584, 16, 17 * 576), "");
  EXPECT_NE(outside_limits(l, RecordFormat::kPacked584, 16, 16 * 584), "") << "dense is not aligned up";
  EXPECT_NE(outside_limits(l, RecordFormat::kPacked584, 16, 18 * 576), "") << "exactly, not at least";
  l.page_stride_align = 0;
  EXPECT_NE(outside_limits(l, RecordFormat::kPacked584, 16, 17 * 576), "") << "no alignment: no page meets it";
  l.page_stride_align = 576;
  EXPECT_NE(outside_limits(l, RecordFormat::kPacked584, std::numeric_limits<std::int64_t>::max(), 0), "")
      << "a block size whose page overflows";
}

TEST(ShimGeometryLimits, BlockSizesArePowersOfTwoOrListed) {
  GeometryLimits l;
  l.block_size = BlockSizeRule::kPowerOfTwo;
  for (std::int64_t b : {1, 2, 16, 64, 1024}) EXPECT_EQ(outside_limits(l, RecordFormat::kFp8_512, b, 0), "") << b;
  for (std::int64_t b : {0, -16, 3, 48, 1000})
    EXPECT_NE(outside_limits(l, RecordFormat::kFp8_512, b, 0).find("not a power of two"), std::string::npos) << b;
  l.block_size = BlockSizeRule::kListed;
  l.block_sizes = {64, 256};
  EXPECT_EQ(outside_limits(l, RecordFormat::kFp8_512, 256, 0), "");
  EXPECT_EQ(outside_limits(l, RecordFormat::kFp8_512, 16, 0), "block size 16 is not one of 64, 256");
}

TEST(ShimGeometryLimits, DeclaredAsTheAbiFields) {
  kvc_op_support s{};
  s.struct_size = sizeof(s);
  GeometryLimits l;
  l.page_stride = PageStrideRule::kAlignedUp;
  l.page_stride_align = 576;
  l.block_size = BlockSizeRule::kListed;
  l.block_sizes = {64, 256};
  declare_limits(l, &s);
  EXPECT_EQ(s.page_stride_rule, KVC_PAGE_STRIDE_ALIGNED_UP);
  EXPECT_EQ(s.page_stride_align, 576);
  EXPECT_EQ(s.block_size_rule, KVC_BLOCK_SIZE_LISTED);
  ASSERT_EQ(s.block_size_count, 2);
  EXPECT_EQ(s.block_sizes, l.block_sizes.data()) << "points at the binding's list, which outlives the answer";

  l.page_stride = PageStrideRule::kDense;
  l.block_size = BlockSizeRule::kPowerOfTwo;
  declare_limits(l, &s);
  EXPECT_EQ(s.page_stride_rule, KVC_PAGE_STRIDE_DENSE);
  EXPECT_EQ(s.page_stride_align, 0) << "alignment only for KVC_PAGE_STRIDE_ALIGNED_UP";
  EXPECT_EQ(s.block_size_rule, KVC_BLOCK_SIZE_POWER_OF_TWO);
  EXPECT_EQ(s.block_size_count, 0);
  EXPECT_EQ(s.block_sizes, nullptr);

  declare_limits(GeometryLimits{}, &s);
  EXPECT_EQ(s.page_stride_rule, KVC_PAGE_STRIDE_ANY);
  EXPECT_EQ(s.block_size_rule, KVC_BLOCK_SIZE_ANY);
}

}  // namespace
}  // namespace kvc::shim
