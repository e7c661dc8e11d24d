// fp16_exhaustive_test.cpp: binary16 RNE narrowing over all 2^32 fp32 inputs, against CUDA's host
// __float2half_rn (the legacy op's fp16 path rounds with it).
#include <gtest/gtest.h>

#include <cstring>

#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/fp16.h"
#include "testkit/compare/exhaustive_sweep.h"

#if KVC_HAVE_CUDA_HEADERS
#include <cuda_fp16.h>
#endif

namespace kvc::oracle {
namespace {

TEST(Fp16Exhaustive, RneEqualsCudaHostConversion) {
#if KVC_HAVE_CUDA_HEADERS
  const auto r = testkit::sweep_u32(0, 0xFFFFFFFFu, [](std::uint32_t u) {
    const float x = float_of(u);
    const __half h = __float2half_rn(x);
    std::uint16_t raw;
    std::memcpy(&raw, &h, sizeof raw);
    return float_to_fp16(x) == raw;
  });
  std::printf("%s\n", testkit::describe("float_to_fp16 vs __float2half_rn (host)", r).c_str());
  EXPECT_EQ(r.mismatches, 0u);
#else
  GTEST_SKIP() << "CUDA headers (cuda_fp16.h) not found at configure time";
#endif
}

}  // namespace
}  // namespace kvc::oracle
