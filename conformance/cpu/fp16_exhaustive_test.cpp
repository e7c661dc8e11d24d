// fp16_exhaustive_test.cpp: binary16 RNE narrowing over all 2^32 fp32 inputs, against CUDA's host
// __float2half_rn (the legacy op's fp16 path rounds with it).
#include <gtest/gtest.h>

#include "kvc/oracle/fp16.h"
#include "testkit/compare/exhaustive_sweep.h"

#if KVC_HAVE_CUDA_HEADERS
#include <cuda_fp16.h>
#endif

namespace kvc::oracle {
namespace {

TEST(Fp16Exhaustive, RneEqualsCudaHostConversion) {
#if KVC_HAVE_CUDA_HEADERS
  const auto r = testkit::sweep_every_float("float_to_fp16 vs __float2half_rn (host)", [](float x) {
    return float_to_fp16(x) == testkit::bits16_of(__float2half_rn(x));
  });
  EXPECT_EQ(r.mismatches, 0u);
#else
  GTEST_SKIP() << "CUDA headers (cuda_fp16.h) not found at configure time";
#endif
}

}  // namespace
}  // namespace kvc::oracle
