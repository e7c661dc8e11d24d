// probes.cpp: start-up checks of the torch semantics the generator relies on (see probes.h).
#include "probes.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "encodings.h"
#include "exact_float.h"
#include "fixture_inputs.h"
#include "generator_constants.h"

// float8_e4m3fn exists from torch 2.1 on.
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))
#define KVC_GOLDEN_HAVE_FLOAT8 1
#else
#define KVC_GOLDEN_HAVE_FLOAT8 0
#endif

namespace kvc::golden_generator {
namespace {

using torch::Tensor;
__extension__ typedef unsigned __int128 U128;

constexpr std::int64_t kVectorLength = 1024;  // long enough for torch's vectorised kernels

std::string hex(std::uint64_t v, int digits) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return s;
}

[[noreturn]] void fail(const std::string& probe, const std::string& detail) {
  throw ProbeFailure("probe \"" + probe + "\" failed: " + detail +
                     "; the generator's arithmetic assumes otherwise, so no fixture was written");
}

float float_of(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Both a one-element tensor (torch's scalar loop) and a long one (its vector kernel).
std::vector<Tensor> both_paths(const Tensor& one) {
  return {one.reshape({1}), one.reshape({1}).expand({kVectorLength}).contiguous()};
}

void check_cast16(const char* probe, Storage16 storage, std::uint32_t in, std::uint32_t expected) {
  for (const Tensor& x : both_paths(f32_from_bits(torch::tensor({static_cast<std::int32_t>(in)}, torch::kInt32)))) {
    const Tensor got = narrow16(x, storage);
    if (!torch::all(got == static_cast<std::int32_t>(expected)).item<bool>())
      fail(probe, "fp32 " + hex(in, 8) + " gave " +
                      hex(static_cast<std::uint32_t>(got[got.numel() - 1].item<int>()), 4) + " (" +
                      std::to_string(got.numel()) + "-element tensor), expected " + hex(expected, 4));
  }
}

void check_widen16(const char* probe, Storage16 storage, std::uint32_t in, std::uint32_t expected) {
  for (const Tensor& x : both_paths(torch::tensor({static_cast<std::int32_t>(in)}, torch::kInt32))) {
    const Tensor got = f32_bits(widen16(x, storage));
    if (!torch::all(got == static_cast<std::int32_t>(expected)).item<bool>())
      fail(probe, hex(in, 4) + " widened to " + hex(static_cast<std::uint32_t>(got[0].item<int>()), 8) + ", expected " +
                      hex(expected, 8));
  }
}

void check_f64_to_f32(std::uint64_t in, std::uint32_t expected) {
  std::int64_t signed_in;
  std::memcpy(&signed_in, &in, sizeof signed_in);
  for (const Tensor& x : both_paths(torch::tensor({signed_in}, torch::kInt64).view(torch::kFloat64))) {
    const Tensor got = f32_bits(x.to(torch::kFloat32));
    if (!torch::all(got == static_cast<std::int32_t>(expected)).item<bool>())
      fail("float64 -> fp32 cast", "float64 " + hex(in, 16) + " gave " +
                                       hex(static_cast<std::uint32_t>(got[0].item<int>()), 8) + ", expected " +
                                       hex(expected, 8));
  }
}

Tensor f32s(const std::vector<std::uint32_t>& bits) {
  std::vector<std::int32_t> b(bits.begin(), bits.end());
  return f32_from_bits(torch::tensor(b, torch::kInt32));
}

std::vector<std::uint32_t> u32_values(const Tensor& t) {
  const Tensor c = t.to(torch::kInt32).contiguous().flatten();
  std::vector<std::uint32_t> out(static_cast<std::size_t>(c.numel()));
  if (!out.empty()) std::memcpy(out.data(), c.data_ptr<std::int32_t>(), out.size() * sizeof(std::uint32_t));
  return out;
}

std::uint32_t first_bits(const Tensor& t) { return static_cast<std::uint32_t>(f32_bits(t).flatten()[0].item<int>()); }

// The fp32 nearest to v among the finite e4m3 values (a search over all codes, ties to the even
// code): an encoder written another way, to check the integer encoder against.
int e4m3_by_search(float v) {
  if (std::isnan(v)) v = -kFp8Max;
  v = std::fmin(std::fmax(v, -kFp8Max), kFp8Max);
  int best = -1;
  double best_distance = 0;
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;  // NaN codes
    const int e = (code >> 3) & 0xF, m = code & 7;
    double value = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
    if (code & 0x80) value = -value;
    const double d = std::fabs(static_cast<double>(v) - value);
    if (best < 0 || d < best_distance || (d == best_distance && (code & 1) == 0 && (best & 1) == 1)) {
      best = code;
      best_distance = d;
    }
  }
  if ((best & 0x7F) == 0) best = std::signbit(v) ? 0x80 : 0x00;  // a zero result keeps v's sign
  return best;
}

std::string probe_casts() {
  // bf16: ties to even, above a tie, overflow to Inf, subnormal ties, signed zero.
  const std::uint32_t bf16_cases[][2] = {{0x3F808000, 0x3F80}, {0x3F818000, 0x3F82}, {0x3F808001, 0x3F81},
                                         {0x7F7FFFFF, 0x7F80}, {0x00018000, 0x0002}, {0x00008000, 0x0000},
                                         {0x80000000, 0x8000}, {0xC0490FDB, 0xC049}, {0xFF800000, 0xFF80}};
  for (const auto& c : bf16_cases) check_cast16("bf16 cast is RNE", Storage16::kBf16, c[0], c[1]);
  // fp16: ties to even, overflow at 65520, subnormals and their ties.
  const std::uint32_t f16_cases[][2] = {{0x3F801000, 0x3C00}, {0x3F803000, 0x3C02}, {0x477FF000, 0x7C00},
                                        {0x477FEFFF, 0x7BFF}, {0x33000000, 0x0000}, {0x33C00000, 0x0002},
                                        {0x33800000, 0x0001}, {0x80000000, 0x8000}, {0x2EDBE6FF, 0x0000}};
  for (const auto& c : f16_cases) check_cast16("fp16 cast is RNE", Storage16::kF16, c[0], c[1]);
  // NaN: whatever torch produces, narrow16 writes the contract's 0x7FFF.
  check_cast16("NaN narrows to 0x7FFF", Storage16::kBf16, 0xFFC00001, kCanonicalNan16);
  check_cast16("NaN narrows to 0x7FFF", Storage16::kF16, 0x7F800001, kCanonicalNan16);
  // Widening is exact, subnormals included.
  check_widen16("bf16 widening is exact", Storage16::kBf16, 0x0001, 0x00010000);
  check_widen16("bf16 widening is exact", Storage16::kBf16, 0x8001, 0x80010000);
  check_widen16("fp16 widening is exact", Storage16::kF16, 0x0001, 0x33800000);
  check_widen16("fp16 widening is exact", Storage16::kF16, 0x83FF, 0xB87FC000);
  check_widen16("fp16 widening is exact", Storage16::kF16, 0x7BFF, 0x477FE000);
  // float64 -> fp32: ties to even, subnormal results, rounding up into the normal range, overflow.
  check_f64_to_f32(0x3FF0000010000000, 0x3F800000);  // 1 + 2^-24: tie -> 1
  check_f64_to_f32(0x3FF0000030000000, 0x3F800002);  // 1 + 3·2^-24: tie -> even
  check_f64_to_f32(0x3FF0000010000001, 0x3F800001);  // just above the tie
  check_f64_to_f32(0x3690000000000000, 0x00000000);  // 2^-150: tie -> +0
  check_f64_to_f32(0x36A8000000000000, 0x00000002);  // 3·2^-150: tie -> 2^-148
  check_f64_to_f32(0x36A0000000000000, 0x00000001);  // 2^-149
  check_f64_to_f32(0x380FFFFFF0000000, 0x00800000);  // 2^-126 - 2^-151: up to the smallest normal
  check_f64_to_f32(0x47EFFFFFF0000000, 0x7F800000);  // FLT_MAX + half an ulp: tie -> Inf
  return "bf16 and fp16 casts round to nearest even with subnormals and overflow to Inf, scalar and vector "
         "kernels; widening is exact; float64 -> fp32 rounds to nearest even without flushing subnormals";
}

std::string probe_exact_arithmetic() {
  // The double-rounding trap: a·b + c = 1 + 2^-23 + 2^-24 - 2^-70 rounds to 1 + 2^-23, where a
  // float64 evaluation rounded twice lands on the midpoint and then on 1 + 2^-22.
  const Tensor trap = fma32(f32s({0x3F800001}), f32s({0x337FFFFE}), f32s({0x3F800001}));
  if (first_bits(trap) != 0x3F800001)
    fail("fma32 rounds once", "fma(0x3f800001, 0x337ffffe, 0x3f800001) gave " + hex(first_bits(trap), 8) +
                                  ", expected 0x3f800001 (a double rounding gives 0x3f800002)");
  const Tensor cancel = fma32(f32s({0x3F800800}), f32s({0x3F800800}), f32s({0xBF801000}));
  if (first_bits(cancel) != 0x33800000)
    fail("fma32 rounds once",
         "fma(1+2^-12, 1+2^-12, -(1+2^-11)) gave " + hex(first_bits(cancel), 8) + ", expected 2^-24");

  // Against the C library's fma, on random operands of every magnitude (subnormals included).
  SplitMix64 rng(0x5EED);
  std::vector<std::uint32_t> a, b, c;
  for (int i = 0; i < 1 << 16; ++i) {
    const auto pick = [&] {
      std::uint32_t v = static_cast<std::uint32_t>(rng.next());
      if ((v & 0x7F800000) == 0x7F800000) v &= 0xBFFFFFFF;  // finite only
      return v;
    };
    a.push_back(pick());
    b.push_back(pick());
    // c near a·b half of the time, so that cancellation and ties are exercised.
    const float near = -float_of(a.back()) * float_of(b.back());
    c.push_back(i % 2 == 0 && std::isfinite(near) ? bits_of(near) ^ static_cast<std::uint32_t>(rng.below(4)) : pick());
  }
  const auto got_fma = u32_values(f32_bits(fma32(f32s(a), f32s(b), f32s(c))));
  const auto got_add = u32_values(f32_bits(add32(f32s(a), f32s(c))));
  const auto got_mul = u32_values(f32_bits(mul32(f32s(a), f32s(b))));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float fa = float_of(a[i]), fb = float_of(b[i]), fc = float_of(c[i]);
    const auto same = [](std::uint32_t x, float y) {
      return x == bits_of(y) || (std::isnan(float_of(x)) && std::isnan(y));
    };
    if (!same(got_fma[i], std::fma(fa, fb, fc)) || !same(got_add[i], fa + fc) || !same(got_mul[i], fa * fb))
      fail("fma32/add32/mul32 equal IEEE fp32", "operands " + hex(a[i], 8) + ", " + hex(b[i], 8) + ", " + hex(c[i], 8));
  }

  // Quotients: the residual of q must be no larger than either neighbour's (long double holds
  // q·b and a − q·b exactly), ties to even; plus the contract's worked examples.
  std::vector<std::uint32_t> num, den;
  for (int i = 0; i < 1 << 14; ++i) {
    num.push_back(static_cast<std::uint32_t>(rng.next()) & 0x7F7FFFFF);
    den.push_back((static_cast<std::uint32_t>(rng.next()) & 0x3FFFFFFF) | 0x00800000);
  }
  const auto q = u32_values(f32_bits(div32(f32s(num), f32s(den))));
  for (std::size_t i = 0; i < num.size(); ++i) {
    const std::uint32_t qb = q[i];
    const long double x = float_of(num[i]), y = float_of(den[i]);
    if (!std::isfinite(float_of(qb)) || float_of(qb) == 0) continue;  // out of fp32's range: not a case the ops reach
    const auto residual = [&](std::uint32_t bits) {
      return std::fabs(x - static_cast<long double>(float_of(bits)) * y);
    };
    const long double r = residual(qb), up = residual(qb + 1), down = residual(qb - 1);
    if (r > up || r > down || (r == up && (qb & 1)) || (r == down && (qb & 1)))
      fail("div32 is correctly rounded", hex(num[i], 8) + " / " + hex(den[i], 8) + " gave " + hex(qb, 8));
  }
  const std::uint32_t div_cases[][3] = {{0x3F800000, 0x3F333333, 0x3FB6DB6E},  // 1 / 0.7f (§3.9 example 5)
                                        {0x40400000, 0x43E00000, 0x3BDB6DB7},  // 3 / 448 (§2.3 example 2)
                                        {0x43DF0000, 0x43E00000, 0x3F7EDB6E},  // 446 / 448
                                        {0x43E10000, 0x43E00000, 0x3F809249},  // 450 / 448
                                        {kAmaxFloorBits, 0x43E00000, 0x346FACAD}};
  for (const auto& d : div_cases)
    if (first_bits(div32(f32s({d[0]}), f32s({d[1]}))) != d[2])
      fail("div32 is correctly rounded", hex(d[0], 8) + " / " + hex(d[1], 8) + " is not " + hex(d[2], 8));

  // rsqrt: r correctly rounded iff m_up^2·x > 1 > m_down^2·x for the midpoints around r, checked
  // in 128-bit integers (m = M·2^e with M < 2^26, x = X·2^f with X < 2^24).
  std::vector<std::uint32_t> xs = {0x00000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0x40000000,
                                   0x40800000, 0x7F7FFFFF, 0x358637BD, 0x3F7FFFFF};
  for (int i = 0; i < 1 << 14; ++i) xs.push_back(static_cast<std::uint32_t>(rng.next()) & 0x7F7FFFFF);
  const auto r = u32_values(f32_bits(rsqrt32(f32s(xs))));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const std::uint32_t rb = r[i];
    if (xs[i] == 0) continue;
    // Sides of 1 for the midpoints between rb and its neighbours, as sign(M^2 X 2^s - 1).
    const auto side = [&](std::uint32_t lo_bits) {  // midpoint of lo_bits and lo_bits + 1
      const std::uint32_t e_lo = (lo_bits >> 23) & 0xFF;
      const std::uint64_t m_lo = (lo_bits & 0x7FFFFF) | (e_lo ? 0x800000u : 0u);
      const int exp_lo = (e_lo ? static_cast<int>(e_lo) : 1) - 150;  // value = m_lo·2^exp_lo
      const std::uint64_t mid = 2 * m_lo + 1;                        // midpoint = mid·2^(exp_lo - 1)
      const std::uint32_t ex = (xs[i] >> 23) & 0xFF;
      const std::uint64_t mx = (xs[i] & 0x7FFFFF) | (ex ? 0x800000u : 0u);
      const int exp_x = (ex ? static_cast<int>(ex) : 1) - 150;
      const U128 product = static_cast<U128>(mid) * mid * mx;  // · 2^(2·(exp_lo − 1) + exp_x)
      const int s = 2 * (exp_lo - 1) + exp_x;
      if (s >= 0) return 1;      // product >= 1 always here: cannot be 1 exactly
      if (-s >= 127) return -1;  // product < 2^127 <= 2^-s
      const U128 one = static_cast<U128>(1) << (-s);
      return product > one ? 1 : (product < one ? -1 : 0);
    };
    // r is right iff the midpoint above it lies above 1/sqrt(x) (m^2·x > 1) and the one below
    // lies below it (m^2·x < 1).
    if (side(rb) <= 0 || side(rb - 1) >= 0)
      fail("rsqrt32 is correctly rounded", "rsqrt(" + hex(xs[i], 8) + ") gave " + hex(rb, 8));
  }
  if (first_bits(rsqrt32(f32s({0x40000000}))) != 0x3F3504F3)
    fail("rsqrt32 is correctly rounded", "rsqrt(2) is not 0x3f3504f3");
  return "fma32, add32, mul32 equal IEEE fp32 on 65536 random operand triples and the double-rounding trap; div32 "
         "and rsqrt32 are correctly rounded on 16384 random inputs each and the contract's worked examples";
}

std::string probe_encoders(std::string* e4m3_path) {
  // §2.2 worked example 1, plus zero, -0 and the boundaries.
  const std::pair<float, int> table[] = {
      {17.0f, 0x58},        {-17.0f, 0xD8},   {19.0f, 0x5A},  {1.0625f, 0x38},       {1.1875f, 0x3A},
      {3 * 0x1p-10f, 0x02}, {0x1p-10f, 0x00}, {464.0f, 0x7E}, {std::nanf(""), 0xFE}, {-0.0f, 0x80},
      {0x1p-9f, 0x01},      {0x1p-6f, 0x08},  {-1e30f, 0xFE}, {0x1.fffffep-7f, 0x08}};
  for (const auto& [v, code] : table) {
    const int got = e4m3_codes(torch::tensor({v}, torch::kFloat32))[0].item<int>();
    if (got != code)
      fail("e4m3 encoder (§2.2 example 1)", std::to_string(v) + " gave " + hex(got, 2) + ", expected " + hex(code, 2));
  }
  // Every bf16 value, and fp32 values around every e4m3 code, against a search over all codes.
  std::vector<std::uint32_t> inputs;
  for (std::uint32_t b = 0; b < 0x10000; ++b) inputs.push_back(b << 16);
  SplitMix64 rng(0xE4E3);
  for (int i = 0; i < 1 << 16; ++i) {
    const std::uint32_t exponent = 110 + static_cast<std::uint32_t>(rng.below(30));  // 2^-17 .. 2^12
    inputs.push_back((static_cast<std::uint32_t>(rng.next()) & 0x807FFFFF) | (exponent << 23));
  }
  const Tensor codes = e4m3_codes(f32s(inputs));
  const auto code_values = u32_values(codes);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int got = static_cast<int>(code_values[i]);
    const int want = e4m3_by_search(float_of(inputs[i]));
    if (got != want)
      fail("e4m3 integer encoder equals a nearest-code search",
           "fp32 " + hex(inputs[i], 8) + " gave " + hex(got, 2) + ", the search " + hex(want, 2));
  }
  std::string path = "integer arithmetic on the clamped fp32 bits (checked against a nearest-code search on " +
                     std::to_string(inputs.size()) + " inputs)";
#if KVC_GOLDEN_HAVE_FLOAT8
  const Tensor clamped = e4m3_clamp(f32s(inputs));
  const Tensor by_torch = clamped.to(at::kFloat8_e4m3fn).view(torch::kUInt8).to(torch::kInt32);
  const Tensor differ = by_torch != codes;
  if (torch::any(differ).item<bool>()) {
    const std::int64_t at = torch::nonzero(differ)[0][0].item<std::int64_t>();
    fail("float8_e4m3fn cast of the clamped value equals the integer encoder",
         "fp32 " + hex(inputs[static_cast<std::size_t>(at)], 8) + ": torch " + hex(by_torch[at].item<int>(), 2) +
             ", integer encoder " + hex(codes[at].item<int>(), 2));
  }
  path += "; torch's float8_e4m3fn cast of the clamped values agrees on all of them";
#else
  path += "; this torch has no float8_e4m3fn dtype, so there is no cross-check against it";
#endif
  *e4m3_path = path;

  // §2.3 worked example 2, and a block holding Inf.
  const Tensor amax = torch::tensor({0.0f, 3.0f, 446.0f, 448.0f, 450.0f, INFINITY}, torch::kFloat32);
  const BlockScales s = ue8m0_scales(amax);
  const int want_bytes[] = {105, 120, 127, 127, 128, 255};
  for (int i = 0; i < 6; ++i)
    if (s.byte[i].item<int>() != want_bytes[i])
      fail("UE8M0 (§2.3 example 2)", "amax " + std::to_string(amax[i].item<float>()) + " gave byte " +
                                         std::to_string(s.byte[i].item<int>()) + ", expected " +
                                         std::to_string(want_bytes[i]));
  if (s.inv[1].item<float>() != 128.0f || s.inv[5].item<float>() != 0.0f)
    fail("UE8M0 (§2.3 example 2)", "inv of amax 3 is not 128 or inv of an Inf block is not 0");
  return "e4m3 worked example 1 and 131072 inputs against a nearest-code search; UE8M0 worked example 2 and an "
         "Inf block (byte 0xff, inv 0); ceil(log2 q) from torch::log2 agrees with the exact exponent on them";
}

// Whether torch's own fp32 a·b + c fuses (reported only: the generator uses no fp32 arithmetic).
std::string measure_fp32_fusion() {
  const Tensor a = f32s({0x3F800800}).expand({kVectorLength}).contiguous();
  const Tensor c = f32s({0xBF801000}).expand({kVectorLength}).contiguous();
  const bool mul_add_fused = first_bits(a * a + c) == 0x33800000;
  const bool addcmul_fused = first_bits(torch::addcmul(c, a, a)) == 0x33800000;
  return std::string("torch fp32 a*b+c (two ops): ") + (mul_add_fused ? "fused" : "two roundings") +
         "; torch::addcmul: " + (addcmul_fused ? "fused" : "two roundings") +
         " (measured, not relied on: every fp32 result here is one rounding of an exact float64 value)";
}

}  // namespace

ProbeReport run_probes() {
  torch::NoGradGuard no_grad;
  ProbeReport report;
  report.passed.push_back(probe_casts());
  report.passed.push_back(probe_exact_arithmetic());
  report.passed.push_back(probe_encoders(&report.e4m3_path));
  report.passed.push_back(measure_fp32_fusion());
  return report;
}

}  // namespace kvc::golden_generator
