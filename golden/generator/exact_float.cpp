// exact_float.cpp: single-rounding fp32 arithmetic from float64 tensor operations (see
// exact_float.h). Each step below is one torch operation, so no compiler can contract two of
// them into an fma; the probes (probes.cpp) check the semantics each step relies on.
#include "exact_float.h"

#include <stdexcept>

namespace kvc::golden_generator {
namespace {

constexpr auto kF32 = torch::kFloat32;
constexpr auto kF64 = torch::kFloat64;

torch::Tensor f64(const torch::Tensor& x) { return x.to(kF64).contiguous(); }
torch::Tensor f64_bits(const torch::Tensor& x) { return x.contiguous().view(torch::kInt64); }
torch::Tensor f64_from_bits(const torch::Tensor& bits) { return bits.contiguous().view(kF64); }

// sign(m^2 · x − 1), exactly, for float64 m holding a 25-bit fp32 midpoint near 1/sqrt(x) and
// float64 x holding an fp32 value: m^2 (<= 50 bits) is exact; it is split into a head of 29
// significant bits and a tail of <= 21, so head·x (<= 53 bits) and tail·x (<= 45 bits) are exact;
// head·x lies within a factor 2 of 1, so head·x − 1 is exact (Sterbenz), and the sign of the
// rounded sum of two exact terms is the sign of their exact sum.
torch::Tensor sign_of_square_times_minus_one(const torch::Tensor& m, const torch::Tensor& x) {
  const torch::Tensor m2 = m * m;
  const torch::Tensor head = f64_from_bits(f64_bits(m2) & ~std::int64_t{0xFFFFFF});
  const torch::Tensor tail = m2 - head;
  const torch::Tensor a = head * x;
  const torch::Tensor b = tail * x;
  return torch::sign((a - 1.0) + b);
}

}  // namespace

torch::Tensor f32_bits(const torch::Tensor& x) { return x.to(kF32).contiguous().view(torch::kInt32); }
torch::Tensor f32_from_bits(const torch::Tensor& bits) { return bits.to(torch::kInt32).contiguous().view(kF32); }
torch::Tensor f32_constant(std::uint32_t bits, const torch::Tensor& like) {
  return f32_from_bits(torch::full(like.sizes(), static_cast<std::int32_t>(bits), torch::kInt32));
}

torch::Tensor round_exact_sum_to_f32(const torch::Tensor& p_in, const torch::Tensor& c_in) {
  const auto shapes = torch::broadcast_tensors({p_in, c_in});
  const torch::Tensor p = shapes[0].contiguous(), c = shapes[1].contiguous();
  // Knuth's TwoSum: s + err == p + c exactly (no overflow: fp32 products and sums stay far
  // below float64's range).
  const torch::Tensor s = p + c;
  const torch::Tensor bb = s - p;
  const torch::Tensor err = (p - (s - bb)) + (c - bb);
  // Round to odd: an inexact s with an even last bit moves one float64 ulp towards the exact
  // sum. s is never 0 when err is not (a float64 sum that rounds to 0 is exactly 0), and a
  // non-finite s comes from a non-finite operand and is already the answer.
  const torch::Tensor bits = f64_bits(s);
  const torch::Tensor inexact_even = (err != 0) & torch::isfinite(s) & ((bits & 1) == 0);
  const torch::Tensor larger_magnitude = (err > 0) == (s > 0);
  const torch::Tensor step = torch::where(larger_magnitude, torch::ones_like(bits), -torch::ones_like(bits));
  const torch::Tensor odd = f64_from_bits(torch::where(inexact_even, bits + step, bits));
  return odd.to(kF32);
}

torch::Tensor mul32(const torch::Tensor& a, const torch::Tensor& b) { return (f64(a) * f64(b)).to(kF32); }

torch::Tensor add32(const torch::Tensor& a, const torch::Tensor& b) { return round_exact_sum_to_f32(f64(a), f64(b)); }

torch::Tensor fma32(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
  return round_exact_sum_to_f32(f64(a) * f64(b), f64(c));
}

torch::Tensor div32(const torch::Tensor& a_in, const torch::Tensor& b_in) {
  const auto shapes = torch::broadcast_tensors({a_in.to(kF32), b_in.to(kF32)});
  const torch::Tensor ad = f64(shapes[0]), bd = f64(shapes[1]);
  const torch::Tensor q0 = (ad / bd).to(kF32).contiguous();
  const torch::Tensor valid = torch::isfinite(q0) & (q0 > 0);
  const torch::Tensor bits = f32_bits(q0);
  const torch::Tensor up = f32_from_bits(bits + 1), down = f32_from_bits(bits - 1);
  // The exact quotient against the midpoints on either side of q0: mid·b is exact.
  const torch::Tensor above_up = f64((f64(q0) + f64(up)) * 0.5) * bd;
  const torch::Tensor below_down = f64((f64(down) + f64(q0)) * 0.5) * bd;
  const torch::Tensor odd = (bits & 1) == 1;  // at a tie the even neighbour wins
  const torch::Tensor go_up = valid & ((ad > above_up) | ((ad == above_up) & odd));
  const torch::Tensor go_down = valid & ((ad < below_down) | ((ad == below_down) & odd));
  return torch::where(go_up, up, torch::where(go_down, down, q0));
}

torch::Tensor rsqrt32(const torch::Tensor& x_in) {
  const torch::Tensor x = x_in.to(kF32).contiguous();
  const torch::Tensor xd = f64(x);
  const torch::Tensor r0 = torch::reciprocal(torch::sqrt(xd)).to(kF32).contiguous();
  const torch::Tensor valid = (x > 0) & torch::isfinite(x);
  const torch::Tensor bits = f32_bits(r0);
  const torch::Tensor up = f32_from_bits(bits + 1), down = f32_from_bits(bits - 1);
  const torch::Tensor side_up = sign_of_square_times_minus_one(f64((f64(r0) + f64(up)) * 0.5), xd);
  const torch::Tensor side_down = sign_of_square_times_minus_one(f64((f64(down) + f64(r0)) * 0.5), xd);
  // 1/sqrt(x) is never an fp32 midpoint (m = 1/sqrt(x) with m of 25 odd bits would make x = 1/m^2
  // non-dyadic), so a zero side means the arithmetic above is broken: fail closed.
  if (torch::any(valid & ((side_up == 0) | (side_down == 0))).item<bool>())
    throw std::runtime_error("rsqrt32: an exact midpoint test returned 0, which cannot happen for fp32 input");
  const torch::Tensor go_up = valid & (side_up < 0);      // m_up^2·x < 1: 1/sqrt(x) lies above m_up
  const torch::Tensor go_down = valid & (side_down > 0);  // m_down^2·x > 1: it lies below m_down
  return torch::where(go_up, up, torch::where(go_down, down, r0));
}

}  // namespace kvc::golden_generator
