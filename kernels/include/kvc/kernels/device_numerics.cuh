// device_numerics.cuh: the kernels' device-side number conversions (docs/contract.md §2).
//
// Every conversion the kernels perform between fp32 and a stored format lives here, once, as a
// __device__ __forceinline__ function, so that the kernels and the device exhaustive tests run the
// very same code. Each is written so that no compiler optimization (contraction into FMA, fast
// math, reassociation) can change a result: a single-rounding hardware conversion, an explicitly
// rounded intrinsic (__fmul_rn, __fmaf_rn, __fdiv_rn), or integer bit manipulation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kvc/contract.h"

namespace kvc::kernels {

// What bf() and its binary16 analogue make of every NaN (docs/contract.md §2).
inline constexpr std::uint16_t kCanonicalNan16 = 0x7FFF;

// ---- 16-bit storage formats --------------------------------------------------------------

// Exact widening of bf16 bits to fp32.
__device__ __forceinline__ float bf16_bits_to_float(std::uint16_t b) {
  return __uint_as_float(static_cast<std::uint32_t>(b) << 16);
}

// bf(x): round to nearest even; every NaN becomes 0x7FFF (docs/contract.md §2). The hardware
// conversion (cvt.rn.bf16.f32) is one instruction and is exactly that rule: equal to the carry
// trick below for every non-NaN input and 0x7FFF for every NaN (both swept over all 2^32 inputs
// on the H200). Conversions are single roundings: no compiler option can change them.
__device__ __forceinline__ std::uint16_t bf16_bits_from_float(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// The contract's bit formula for bf(x), kept as the reference the hardware path is swept against.
__device__ __forceinline__ std::uint16_t bf16_bits_by_formula(float x) {
  const std::uint32_t bits = __float_as_uint(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kCanonicalNan16;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Two at once (cvt.rn.bf16x2.f32): `lo` in the low half. Same rounding per element.
__device__ __forceinline__ std::uint32_t bf16x2_bits_from_float(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return static_cast<std::uint32_t>(__bfloat16_as_ushort(v.x)) |
         (static_cast<std::uint32_t>(__bfloat16_as_ushort(v.y)) << 16);
}

// Exact widening of binary16 bits to fp32 (the hardware conversion is exact for every input).
__device__ __forceinline__ float fp16_bits_to_float(std::uint16_t h) { return __half2float(__ushort_as_half(h)); }

// binary16 round to nearest even with subnormals, overflow to +-Inf; every NaN becomes 0x7FFF
// like bf16 (the hardware conversion's canonical NaN; swept over all 2^32 inputs on the H200).
__device__ __forceinline__ std::uint16_t fp16_bits_from_float(float x) { return __half_as_ushort(__float2half_rn(x)); }

// Two at once (cvt.rn.f16x2.f32): `lo` in the low half.
__device__ __forceinline__ std::uint32_t fp16x2_bits_from_float(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return static_cast<std::uint32_t>(__half_as_ushort(v.x)) | (static_cast<std::uint32_t>(__half_as_ushort(v.y)) << 16);
}

// ---- e4m3fn -----------------------------------------------------------------------------

// The contract's clamp: fmaxf returns its non-NaN operand, so NaN lands on -448 (code 0xFE).
__device__ __forceinline__ float fp8_clamp(float v) { return fminf(fmaxf(v, -kFp8Max), kFp8Max); }

// e4m3(clamp(v)): the clamp, then the hardware satfinite round-to-nearest-even conversion.
__device__ __forceinline__ std::uint8_t e4m3_from_float_clamped(float v) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(fp8_clamp(v), __NV_SATFINITE, __NV_E4M3));
}

// Two codes at once (cvt.rn.satfinite.e4m3x2.f32): `lo` in the low byte, `hi` in the high byte,
// each equal to e4m3_from_float_clamped of that element. Only the lower half of the clamp is
// spelled: satfinite already maps every value above 448 (+Inf included) to 448, exactly what
// fminf(., 448) would feed it, so e4m3(fminf(fmaxf(v, -448), 448)) == satfinite(fmaxf(v, -448))
// for all 2^32 inputs (swept on the H200). The fmaxf is the part that carries the contract: it
// turns NaN into -448 (code 0xFE) where satfinite alone would give the NaN code 0x7F.
__device__ __forceinline__ std::uint16_t e4m3x2_from_float_clamped(float lo, float hi) {
  return static_cast<std::uint16_t>(
      __nv_cvt_float2_to_fp8x2(make_float2(fmaxf(lo, -kFp8Max), fmaxf(hi, -kFp8Max)), __NV_SATFINITE, __NV_E4M3));
}

// ---- UE8M0 block scales -----------------------------------------------------------------

// E = ceil(log2 q) as the contract defines it, spelled literally: ceilf of the device's (accurate,
// non-fast-math) log2f, i.e. ceil(RN_f32(log2 q)). q must be finite and positive; with the 1e-4
// amax floor and finite data E lies in [-22, 120].
__device__ __forceinline__ int ue8m0_exponent_log2f(float q) { return static_cast<int>(ceilf(log2f(q))); }

// E as the kernels compute it: the same value from q's bits, without log2f (a few integer
// instructions instead of a polynomial; building with KVC_KERNELS_UE8M0_LOG2F makes the kernels
// use ue8m0_exponent_log2f instead).
// For q = 2^k (1 + n 2^-23): E = k when n == 0; otherwise RN_f32(log2 q) = k + log2(1 + n 2^-23)
// rounds down to exactly k (so E = k, not k + 1) iff log2(1 + n 2^-23) is below half an ulp of
// |k + .|, i.e. iff n <= T, with T set by the binade of a = (k >= 0 ? k : -k - 1): T = 0 for
// a < 4, and 1, 2, 5, 11, 22 for a in [4, 8), [8, 16), [16, 32), [32, 64), [64, 128) (the largest
// n with n * 2^-23 / ln 2 < 2^(b-24), b = floor(log2 a)). This is the measured behaviour of the
// device log2f (docs/contract.md §2: mismatches with the exact ceil only just above powers of two)
// and equals ue8m0_exponent_log2f for every positive normal q (swept over all of them on the
// H200, and on the host against the oracle's ceil(RN_f32(log2 q))). q must be positive and normal
// (the amax floor guarantees q >= 2^-23).
__device__ __forceinline__ int ue8m0_exponent(float q) {
  const std::uint32_t bits = __float_as_uint(q);
  const int k = static_cast<int>(bits >> 23) - kUe8m0Bias;
  const std::uint32_t n = bits & 0x7FFFFFu;
  const std::uint32_t a = static_cast<std::uint32_t>(k >= 0 ? k : -k - 1);
  const int binade = 31 - __clz(static_cast<int>(a | 1u));  // floor(log2 a), 0 for a in {0, 1}
  // T by binade 0..6, one byte each: 0, 0, 1, 2, 5, 11, 22.
  constexpr unsigned long long kThresholds = 0x00160B0502010000ull;
  const std::uint32_t t = static_cast<std::uint32_t>(kThresholds >> (8 * binade)) & 0xFFu;
  return k + (n > t ? 1 : 0);
}

// Scale byte clamp(E + 127, 0, 255).
__device__ __forceinline__ std::uint8_t ue8m0_byte(int exponent) {
  const int biased = exponent + kUe8m0Bias;
  return static_cast<std::uint8_t>(biased < 0 ? 0 : (biased > 255 ? 255 : biased));
}

// 2^-E built from the bits: exact for E in [-127, 126] (normal results), which covers every E a
// finite block can have.
__device__ __forceinline__ float ue8m0_inverse(int exponent) {
  return __uint_as_float(static_cast<std::uint32_t>(kUe8m0Bias - exponent) << 23);
}

// One block's scale from its NaN-ignoring absmax (fmaxf-reduced from 0, before the floor).
// A block holding +-Inf has amax = Inf, q = Inf, E = +Inf: byte 0xFF and inverse 0, so its finite
// elements quantize to +-0 and the Inf itself to Inf*0 = NaN -> clamp -> 0xFE.
struct DevBlockScale {
  float inverse;
  std::uint8_t byte;
};
__device__ __forceinline__ DevBlockScale ue8m0_block_scale(float amax_unfloored) {
  const float amax = fmaxf(amax_unfloored, kAmaxFloor);
  const float q = __fdiv_rn(amax, kFp8Max);
  if (isinf(q)) return DevBlockScale{0.0f, kUe8m0Nan};
#ifdef KVC_KERNELS_UE8M0_LOG2F
  const int exponent = ue8m0_exponent_log2f(q);
#else
  const int exponent = ue8m0_exponent(q);
#endif
  return DevBlockScale{ue8m0_inverse(exponent), ue8m0_byte(exponent)};
}

// byte of one element of a block: e4m3(clamp(fl(y * 2^-E))).
__device__ __forceinline__ std::uint8_t e4m3_block_code(float y, float inverse) {
  return e4m3_from_float_clamped(__fmul_rn(y, inverse));
}

// ---- RoPE -------------------------------------------------------------------------------

// GPT-J pair rotation (docs/contract.md §2): even' = fma(a, c, -fl(b*s)), odd' = fma(a, s, fl(b*c)).
__device__ __forceinline__ void rope_pair(float& a, float& b, float c, float s) {
  const float even = __fmaf_rn(a, c, -__fmul_rn(b, s));
  const float odd = __fmaf_rn(a, s, __fmul_rn(b, c));
  a = even;
  b = odd;
}

}  // namespace kvc::kernels
