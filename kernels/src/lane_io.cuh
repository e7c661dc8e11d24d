// lane_io.cuh: one lane's 16 dims of a 512-dim row: vector loads and stores, widening to fp32 and
// narrowing back to the 16-bit storage type (docs/contract.md §1 execution model, §2 bf()).
//
// Lane L owns dims [16L, 16L + 16): 32 bytes of bf16/fp16, read and written as two 16-byte
// vectors, so a warp moves a whole 1024-byte row in coalesced 512-byte halves. Callers guarantee
// 16-byte alignment (the wrapper's strict validation: bases, strides, 16-dim offsets).
#pragma once

#include <cstdint>

#include "kvc/kernels/device_numerics.cuh"

namespace kvc::kernels::detail {

inline constexpr unsigned kFullMask = 0xFFFFFFFFu;
inline constexpr int kLaneDims = 16;
inline constexpr int kFirstRopeLane = 28;  // lanes 28..31 hold dims 448..511

// 16 16-bit values as 8 words; element 2k is the low half of word k (little-endian memory order).
struct LaneBits {
  std::uint32_t w[8];
};

__device__ __forceinline__ LaneBits lane_bits_from_vectors(uint4 a, uint4 b) {
  return LaneBits{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}

// Plain global loads: used where the buffer may be written by the same kernel (q in place).
__device__ __forceinline__ LaneBits load_lane_bits(const void* p) {
  const uint4* v = static_cast<const uint4*>(p);
  return lane_bits_from_vectors(v[0], v[1]);
}

// Read-only loads for inputs nobody writes during the kernel (kv rows).
__device__ __forceinline__ LaneBits load_lane_bits_readonly(const void* p) {
  const uint4* v = static_cast<const uint4*>(p);
  return lane_bits_from_vectors(__ldg(v), __ldg(v + 1));
}

// Stores go through the st.global.cg intrinsic: one 16-byte instruction each, which the compiler
// cannot split into narrower stores when it merges the code paths of different lanes (it did,
// into four 4-byte stores, for plain assignments), and cached in L2 only: the records are
// written once here and read by other kernels.
__device__ __forceinline__ void store16(void* p, uint4 v) { __stcg(static_cast<uint4*>(p), v); }

__device__ __forceinline__ void store_lane_bits(void* p, const LaneBits& b) {
  uint4* v = static_cast<uint4*>(p);
  __stcg(v, make_uint4(b.w[0], b.w[1], b.w[2], b.w[3]));
  __stcg(v + 1, make_uint4(b.w[4], b.w[5], b.w[6], b.w[7]));
}

__device__ __forceinline__ void store_lane_zeros(void* p) {
  uint4* v = static_cast<uint4*>(p);
  __stcg(v, make_uint4(0u, 0u, 0u, 0u));
  __stcg(v + 1, make_uint4(0u, 0u, 0u, 0u));
}

// f32(b): exact widening of bf16 (kFp16 = false) or binary16 (kFp16 = true).
template <bool kFp16>
__device__ __forceinline__ void widen(const LaneBits& b, float x[kLaneDims]) {
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    if constexpr (kFp16) {
      x[2 * k] = fp16_bits_to_float(static_cast<std::uint16_t>(b.w[k] & 0xFFFFu));
      x[2 * k + 1] = fp16_bits_to_float(static_cast<std::uint16_t>(b.w[k] >> 16));
    } else {
      x[2 * k] = __uint_as_float(b.w[k] << 16);
      x[2 * k + 1] = __uint_as_float(b.w[k] & 0xFFFF0000u);
    }
  }
}

// One rounding to the storage type per element, two per instruction: bf() or its binary16
// analogue, NaN -> 0x7FFF.
template <bool kFp16>
__device__ __forceinline__ LaneBits narrow(const float x[kLaneDims]) {
  LaneBits b;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    if constexpr (kFp16) {
      b.w[k] = fp16x2_bits_from_float(x[2 * k], x[2 * k + 1]);
    } else {
      b.w[k] = bf16x2_bits_from_float(x[2 * k], x[2 * k + 1]);
    }
  }
  return b;
}

// 16 e4m3 codes of fl(y * inv) (clamped, satfinite RNE), byte i = element i.
__device__ __forceinline__ uint4 e4m3_lane_codes(const float y[kLaneDims], float inv) {
  std::uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t lo = e4m3x2_from_float_clamped(__fmul_rn(y[4 * k], inv), __fmul_rn(y[4 * k + 1], inv));
    const std::uint32_t hi = e4m3x2_from_float_clamped(__fmul_rn(y[4 * k + 2], inv), __fmul_rn(y[4 * k + 3], inv));
    w[k] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// max |y_i| over the lane, ignoring NaN (fmaxf returns the non-NaN operand), from +0.
__device__ __forceinline__ float lane_absmax(const float y[kLaneDims]) {
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < kLaneDims; ++i) m = fmaxf(m, fabsf(y[i]));
  return m;
}

}  // namespace kvc::kernels::detail
