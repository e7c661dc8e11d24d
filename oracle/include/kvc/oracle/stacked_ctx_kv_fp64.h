// stacked_ctx_kv_fp64.h: the projection in fp64 (Eigen), and the error bound it is judged by.
//
// A GEMM that sums in another order than the contract's fma chain (tensor cores, split-K, cuBLAS)
// cannot match the oracle bit for bit; docs/contract.md §4.5 compares it under the standard forward
// error bound instead: for a dot product of n terms in any order, |computed - exact| <=
// gamma_n * sum |x_c * w_c| with gamma_n = n u / (1 - n u), u = 2^-24. The bias is one more term
// (n = hidden + 1, with |b| in the sum). This file supplies both sides of that inequality: the
// exact value and the magnitude sum, computed in fp64 (a 16-bit times 16-bit product is exact in
// fp64, and fp64's own summation error, bounded the same way with u = 2^-53, is added to every
// bound), and the budget it implies for two stored 16-bit results.
//
// The budget. Let a and b be two fp32 results of the same element, each within gamma_n * S of the
// exact value (S = sum |x w| + |b|), and oa = round_D(a), ob = round_D(b). Each rounding moves a
// value by at most half an ulp of D at its magnitude, which is at most |S'| = S (1 + gamma_n), so
//   |oa - ob| <= ulp_D(S') + 2 gamma_n S  <  (1 + 2^(p+1) gamma_n) * ulp_D(S'),
// because S < 2^p ulp_D(S') for D with p significand bits (bf16: 8, fp16: 11). The budget is
// that factor, D_budget = 1 + 2^(p+1) gamma_n, in ulps of D at the magnitude S': bf16 with
// hidden 4096 gives 1.125, fp16 2.0. Relative to S it is at most D_budget * 2^(1-p) (0.9% in bf16,
// 0.1% in fp16 at hidden 4096), below the upstream parity test's rtol of 2e-2 and 5e-3.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"

namespace kvc::oracle {

inline constexpr double kFp32UnitRoundoff = 0x1p-24;
inline constexpr double kFp64UnitRoundoff = 0x1p-53;

// The projection [T, projection_width()] of a validated case (every layer's K then V rows, like
// the stored projection) in fp64: the exact value sum x w + b, and the magnitude sum |x w| + |b|.
struct ProjectionFp64 {
  std::int64_t tokens = 0;
  std::int64_t width = 0;
  std::vector<double> value;
  std::vector<double> magnitude;
};
ProjectionFp64 stacked_ctx_kv_projection_fp64(const StackedCtxKvCase& c);

// gamma_n = n u / (1 - n u) for unit roundoff u (fp32 by default); +Inf when n u >= 1.
double gemm_gamma(std::int64_t n, double unit_roundoff = kFp32UnitRoundoff);

// Terms of layer `layer`'s dot products: hidden, plus one for the bias.
std::int64_t projection_terms(const StackedCtxKvCase& c, int layer);

// Significand bits of a 16-bit storage dtype (bf16 8, fp16 11), and the spacing of its values at
// magnitude m (the subnormal spacing below the normal range).
int storage_precision_bits(DType storage);
double storage_ulp(double magnitude, DType storage);

// D_budget = 1 + 2^(p+1) gamma_n: the ulps of D (at the magnitude S') two stored results of an
// n-term dot product may differ by when each is within gamma_n S of the exact value.
double projection_ulp_budget(std::int64_t terms, DType storage);

// Whether an fp32 result of an n-term dot product lies within the forward error bound of the fp64
// reference: |computed - value| <= (gamma_n + gamma64_n) * magnitude, fp64's own error included.
bool within_gemm_bound(double computed, double value, double magnitude, std::int64_t terms);

// The largest difference two stored results of the element may show under the budget:
// D_budget * ulp_D(magnitude * (1 + gamma_n)).
double projection_allowance(double magnitude, std::int64_t terms, DType storage);

}  // namespace kvc::oracle
