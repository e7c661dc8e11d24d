// encodings.cpp: narrowing, e4m3 and UE8M0 as tensor operations (see encodings.h).
#include "encodings.h"

#include <cstdio>
#include <stdexcept>

#include "exact_float.h"
#include "generator_constants.h"

namespace kvc::golden_generator {
namespace {

constexpr auto kF32 = torch::kFloat32;
constexpr auto kI32 = torch::kInt32;
constexpr auto kI64 = torch::kInt64;

// Shifts by a constant (the C++ API has no operator>> for tensors); arithmetic for signed types.
torch::Tensor shr(const torch::Tensor& t, std::int64_t n) { return torch::bitwise_right_shift(t, n); }
torch::Tensor shl(const torch::Tensor& t, std::int64_t n) { return torch::bitwise_left_shift(t, n); }

torch::ScalarType torch_type(Storage16 s) { return s == Storage16::kBf16 ? torch::kBFloat16 : torch::kHalf; }

// e4m3 codes of magnitudes at or above 2^-6 (fp32 bits 0x3C800000), where the code keeps the
// exponent: RNE of the fp32 pattern at 3 mantissa bits, then the exponent rebiased from 127 to 7
// (a mantissa that rounds up carries into the exponent, which is the next code).
constexpr std::int32_t kE4m3MinNormalBits = 0x3C800000;
constexpr std::int32_t kRebias = (127 - 7) << 3;

}  // namespace

torch::Tensor widen16(const torch::Tensor& bits, Storage16 storage) {
  const torch::Tensor b = bits.to(kI64);
  const torch::Tensor as_int16 = (b - (b >= 0x8000).to(kI64) * 0x10000).to(torch::kInt16).contiguous();
  return as_int16.view(torch_type(storage)).to(kF32);
}

torch::Tensor narrow16(const torch::Tensor& x_in, Storage16 storage) {
  const torch::Tensor x = x_in.to(kF32).contiguous();
  const torch::Tensor bits = x.to(torch_type(storage)).contiguous().view(torch::kInt16).to(kI32) & 0xFFFF;
  return torch::where(torch::isnan(x), torch::full_like(bits, kCanonicalNan16), bits);
}

torch::Tensor e4m3_clamp(const torch::Tensor& v_in) {
  const torch::Tensor v = v_in.to(kF32);
  // fminf(fmaxf(v, -448), 448): fmaxf returns the non-NaN operand, so every NaN becomes -448.
  return torch::where(torch::isnan(v), torch::full_like(v, -kFp8Max), torch::clamp(v, -kFp8Max, kFp8Max));
}

torch::Tensor e4m3_codes(const torch::Tensor& v) {
  const torch::Tensor u = f32_bits(e4m3_clamp(v)).to(kI64);
  const torch::Tensor sign = shr(u, 31) & 1;
  const torch::Tensor a = u & 0x7FFFFFFF;
  // Normal codes.
  const torch::Tensor rounded = a + 0x7FFFF + (shr(a, 20) & 1);
  const torch::Tensor normal_code = shr(rounded, 20) - kRebias;
  // Subnormal codes (and zero): the integer nearest to |v|·2^9, ties to even. |v| = m·2^(e-150)
  // for an fp32 exponent field e >= 1 (m with its hidden bit), m·2^-149 for e = 0; so |v|·2^9
  // is m shifted right by 141 - e (140 for e = 0), at least 21 places below 2^-6.
  const torch::Tensor e = shr(a, 23) & 0xFF;
  const torch::Tensor m = (a & 0x7FFFFF) | torch::where(e != 0, torch::full_like(e, 0x800000), torch::zeros_like(e));
  const torch::Tensor shift = torch::where(e == 0, torch::full_like(e, 140), 141 - e).clamp(1, 40);
  const torch::Tensor one = torch::ones_like(shift);
  const torch::Tensor q = torch::bitwise_right_shift(m, shift);
  const torch::Tensor rem = m & (torch::bitwise_left_shift(one, shift) - 1);
  const torch::Tensor half = torch::bitwise_left_shift(one, shift - 1);
  const torch::Tensor up = (rem > half) | ((rem == half) & ((q & 1) == 1));
  const torch::Tensor subnormal_code = q + up.to(kI64);
  const torch::Tensor magnitude = torch::where(a >= kE4m3MinNormalBits, normal_code, subnormal_code);
  return (shl(sign, 7) | magnitude).to(kI32);
}

torch::Tensor nan_ignoring_amax(const torch::Tensor& blocks) {
  const torch::Tensor magnitude = torch::abs(blocks.to(kF32));
  return torch::where(torch::isnan(magnitude), torch::zeros_like(magnitude), magnitude).amax(-1);
}

BlockScales ue8m0_scales(const torch::Tensor& amax_in) {
  const torch::Tensor amax = amax_in.to(kF32).contiguous();
  const torch::Tensor floored = torch::maximum(amax, f32_constant(kAmaxFloorBits, amax));
  const torch::Tensor q = div32(floored, torch::full_like(floored, kFp8Max));
  const torch::Tensor finite = torch::isfinite(q);
  // E = ceil(RN32(log2 q)): float64 log2, one rounding to fp32, ceil.
  const torch::Tensor e_log = torch::ceil(torch::log2(q.to(torch::kFloat64)).to(kF32));
  const torch::Tensor e = torch::where(finite, e_log, torch::zeros_like(e_log)).to(kI32);
  // docs/contract.md §2.3: for every amax that is a bf16 or fp16 value, or the floor, this equals
  // the exact ceiling of log2 q, read from q's bits. The inputs here are always such values, so
  // a difference means torch's log2 is not what the generator assumes: fail closed.
  const torch::Tensor qb = f32_bits(q);
  const torch::Tensor e_exact = (shr(qb, 23) & 0xFF) - kUe8m0Bias + ((qb & 0x7FFFFF) != 0).to(kI32);
  const torch::Tensor disagree = finite & (e != e_exact);
  if (torch::any(disagree).item<bool>()) {
    const torch::Tensor first = torch::nonzero(disagree.flatten())[0][0];
    char what[200];
    std::snprintf(what, sizeof what,
                  "UE8M0: ceil(log2 q) from torch::log2 gives %d and the exact exponent %d for q = 0x%08x; the "
                  "contract says they agree for 16-bit amax",
                  e.flatten()[first].item<int>(), e_exact.flatten()[first].item<int>(),
                  static_cast<unsigned>(qb.flatten()[first].item<int>()));
    throw std::runtime_error(what);
  }
  BlockScales s;
  s.byte = torch::where(finite, (e + kUe8m0Bias).clamp(0, 255), torch::full_like(e, kUe8m0Inf));
  // 2^-E built from its bits; for finite data E lies in [-22, 120], so 2^-E is a normal fp32.
  const torch::Tensor inv_bits = shl((kUe8m0Bias - e).clamp(1, 254), 23);
  s.inv = torch::where(finite, f32_from_bits(inv_bits), torch::zeros_like(amax));
  return s;
}

torch::Tensor bytes_of16(const torch::Tensor& bits) {
  const torch::Tensor b = bits.to(kI32);
  std::vector<std::int64_t> sizes = b.sizes().vec();
  sizes.back() *= 2;
  return torch::stack({b & 0xFF, shr(b, 8) & 0xFF}, -1).reshape(sizes);
}

}  // namespace kvc::golden_generator
