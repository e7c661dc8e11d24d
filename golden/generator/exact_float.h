// exact_float.h: fp32 arithmetic with the contract's single roundings, written as torch tensor
// operations on float64.
//
// The contract (docs/contract.md, "Conventions") defines every result as one IEEE binary32
// rounding (RNE, no flush-to-zero) of an exact value: a product, a sum, an fma, a quotient, a
// reciprocal square root. Torch offers none of these with a guarantee (its fp32 kernels may or
// may not fuse, and its rsqrt is 1/sqrt), so the generator builds each one from operations whose
// results are exact or correctly rounded in float64:
//   - a product of two fp32 values is exact in float64 (24 + 24 bits);
//   - a sum is carried exactly as a float64 pair (Knuth's TwoSum), rounded to float64 "to odd",
//     and then to fp32: rounding to odd at 53 bits and then to nearest at 24 bits is the single
//     rounding to nearest (53 >= 24 + 2), so fma and add have no double-rounding error;
//   - a quotient and an rsqrt start from the float64 estimate rounded to fp32 and are corrected
//     by at most one ulp with exact midpoint tests (a 25-bit midpoint times a 24-bit value is
//     exact in float64).
// Every function takes and returns kFloat32 tensors of one shape (or broadcastable shapes).
#pragma once

#include <torch/torch.h>

namespace kvc::golden_generator {

torch::Tensor mul32(const torch::Tensor& a, const torch::Tensor& b);                          // fl(a·b)
torch::Tensor add32(const torch::Tensor& a, const torch::Tensor& b);                          // fl(a + b)
torch::Tensor fma32(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c);  // fl(a·b + c)
// fl(a / b) for a >= 0 (finite or +Inf) and finite b > 0: the cases the contract divides.
torch::Tensor div32(const torch::Tensor& a, const torch::Tensor& b);
// The correctly rounded 1/sqrt(x) (CUDA's __frsqrt_rn): +Inf for +0, -Inf for -0, 0 for +Inf,
// NaN for NaN and negative x.
torch::Tensor rsqrt32(const torch::Tensor& x);

// RN32(p + c) for float64 tensors p and c (the sum taken exactly); the primitive behind add32
// and fma32.
torch::Tensor round_exact_sum_to_f32(const torch::Tensor& p, const torch::Tensor& c);

// Bits of an fp32 tensor as int32, and back.
torch::Tensor f32_bits(const torch::Tensor& x);
torch::Tensor f32_from_bits(const torch::Tensor& bits);
// A kFloat32 tensor of `like`'s shape holding the fp32 value with these bits.
torch::Tensor f32_constant(std::uint32_t bits, const torch::Tensor& like);

}  // namespace kvc::golden_generator
