// rsqrt.h: correctly rounded fp32 reciprocal square root (CUDA __frsqrt_rn).
//
// The contract fixes rsqrt as correctly rounded (docs/contract.md §2). The result is first estimated in
// double, then proven: the two midpoints around the candidate are compared with 1/sqrt(x) exactly
// in 128-bit integer arithmetic (m^2 * x against 1), so no double-rounding case can slip through.
// A midpoint can never be the exact result (x = 1/m^2 is not a float for a 25-bit odd m), so the
// rounding has no ties. Cost: a sqrt, a divide and four 128-bit multiplies.
#pragma once

namespace kvc::oracle {

// rsqrt_rn(+0) = +Inf, rsqrt_rn(-0) = -Inf, rsqrt_rn(+Inf) = +0, negative or NaN -> NaN.
float rsqrt_rn(float x);

}  // namespace kvc::oracle
