// fp8_e4m3_exhaustive_test.cpp: the e4m3fn encoders over all 2^32 fp32 inputs.
//
// Three independent witnesses: CUDA's own host conversion (cuda_fp8.hpp, measured identical to the
// device's hardware cvt for all 2^32 inputs on the H200), CUDA's conversion behind the contract's
// clamp, and a nearest-code search over the decoded code table that shares no code with the
// bit-manipulating encoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "kvc/contract.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "testkit/compare/exhaustive_sweep.h"

#if KVC_HAVE_CUDA_HEADERS
#include <cuda_fp8.h>
#endif

namespace kvc::oracle {
namespace {

constexpr const char* kNoCudaWitness =
    "CUDA headers (cuda_fp8.h) not found at configure time: CUDA's host conversion is unavailable as a witness";

#if KVC_HAVE_CUDA_HEADERS
std::uint8_t cuda_host_cvt(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}
#endif

// The device's fminf/fmaxf: the non-NaN operand wins for every NaN, signaling ones included
// (glibc's fmaxf returns NaN for a signaling operand, so it cannot stand in for the device).
float device_fmaxf(float a, float b) { return std::isnan(a) ? b : std::isnan(b) ? a : std::fmax(a, b); }
float device_fminf(float a, float b) { return std::isnan(a) ? b : std::isnan(b) ? a : std::fmin(a, b); }

TEST(Fp8E4m3Exhaustive, RawEncodeEqualsCudaHostConversion) {
#if KVC_HAVE_CUDA_HEADERS
  const auto r = testkit::sweep_every_float("e4m3_encode_raw vs __nv_cvt_float_to_fp8",
                                            [](float x) { return e4m3_encode_raw(x) == cuda_host_cvt(x); });
  EXPECT_EQ(r.mismatches, 0u);
#else
  GTEST_SKIP() << kNoCudaWitness;
#endif
}

TEST(Fp8E4m3Exhaustive, ClampFirstEncodeEqualsCudaOfClampedInput) {
#if KVC_HAVE_CUDA_HEADERS
  const auto r = testkit::sweep_every_float("e4m3_encode vs __nv_cvt(fminf(fmaxf(x,-448),448))", [](float x) {
    return e4m3_encode(x) == cuda_host_cvt(device_fminf(device_fmaxf(x, -kFp8Max), kFp8Max));
  });
  EXPECT_EQ(r.mismatches, 0u);
#else
  GTEST_SKIP() << kNoCudaWitness;
#endif
}

// Nearest-code reference: the 127 non-negative finite codes decode to increasing values; find the
// two neighbours of |v| by binary search, pick the nearer, on an exact tie the even code. The
// midpoint of two neighbours is exact in fp32, so comparing against it decides without rounding.
class NearestCodeReference {
 public:
  NearestCodeReference() {
    for (int c = 0; c < 0x7F; ++c) values_[c] = e4m3_decode(static_cast<std::uint8_t>(c));
  }
  std::uint8_t encode(float x) const {
    const float v = device_fminf(device_fmaxf(x, -kFp8Max), kFp8Max);  // contract clamp, NaN -> -448
    const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
    const float a = std::fabs(v);
    const auto it = std::lower_bound(values_.begin(), values_.end(), a);
    const int hi = static_cast<int>(it - values_.begin());
    if (hi < static_cast<int>(values_.size()) && values_[hi] == a) return sign | static_cast<std::uint8_t>(hi);
    const int lo = hi - 1;  // a > 0 here and a <= 448, so lo and hi are both valid codes
    const float mid = (values_[lo] + values_[hi]) / 2.0f;
    int code;
    if (a < mid)
      code = lo;
    else if (a > mid)
      code = hi;
    else
      code = (lo % 2 == 0) ? lo : hi;
    return sign | static_cast<std::uint8_t>(code);
  }

 private:
  std::array<float, 0x7F> values_{};
};

TEST(Fp8E4m3Exhaustive, ClampFirstEncodeEqualsNearestCodeSearch) {
  const NearestCodeReference reference;
  const auto r = testkit::sweep_every_float("e4m3_encode vs nearest-code search",
                                            [&](float x) { return e4m3_encode(x) == reference.encode(x); });
  EXPECT_EQ(r.mismatches, 0u);
}

}  // namespace
}  // namespace kvc::oracle
