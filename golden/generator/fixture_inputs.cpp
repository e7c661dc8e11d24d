// fixture_inputs.cpp: deterministic rows, tables and weights (see fixture_inputs.h).
#include "fixture_inputs.h"

#include <cstring>
#include <stdexcept>

#include "generator_constants.h"

namespace kvc::golden_generator {
namespace {

constexpr std::int64_t kSegmentDims = 32;
constexpr int kEdgeClasses = 13;

// The 16-bit format's fields and special patterns.
struct Format16 {
  int mantissa_bits;
  int bias;
  int max_exponent_field;  // of finite values
  std::uint16_t pos_inf, neg_inf, quiet_nan, negative_nan, signalling_nan, odd_nan;
  int pow2_k_min, pow2_k_max;  // 448·2^k stays a normal value in this range
  int huge_exponent;           // an outlier that dwarfs the rest
};
constexpr Format16 kBf16Format{7, 127, 254, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFA5, -20, 20, 100};
constexpr Format16 kF16Format{10, 15, 30, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFDA5, -10, 7, 15};

const Format16& format16(Storage16 s) { return s == Storage16::kBf16 ? kBf16Format : kF16Format; }

std::uint16_t pattern(const Format16& f, bool negative, int exponent_field, std::uint32_t mantissa) {
  return static_cast<std::uint16_t>((negative ? 0x8000u : 0u) |
                                    (static_cast<std::uint32_t>(exponent_field) << f.mantissa_bits) |
                                    (mantissa & ((1u << f.mantissa_bits) - 1)));
}

// A normal value with unbiased exponent in [lo, hi], random sign and mantissa.
std::uint16_t random_normal(const Format16& f, SplitMix64& rng, int lo, int hi) {
  const int e = lo + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
  return pattern(f, rng.coin(), f.bias + e, static_cast<std::uint32_t>(rng.next()));
}

std::uint16_t random_subnormal(const Format16& f, SplitMix64& rng) {
  const std::uint32_t m = 1 + static_cast<std::uint32_t>(rng.below((1u << f.mantissa_bits) - 1));
  return pattern(f, rng.coin(), 0, m);
}

// The pattern of odd · 2^p, which must be exact in the format (normal or subnormal).
std::uint16_t odd_times_pow2(const Format16& f, bool negative, std::uint32_t odd, int p) {
  int top = 0;
  while ((odd >> (top + 1)) != 0) ++top;  // odd = 1.xxx · 2^top
  if (top > f.mantissa_bits) throw std::logic_error("odd_times_pow2: too many significant bits");
  if (top + p >= 1 - f.bias)
    return pattern(f, negative, f.bias + top + p, (odd - (1u << top)) << (f.mantissa_bits - top));
  // Subnormal: odd · 2^p = m · 2^(1 - bias - mantissa_bits).
  const int shift = p + f.bias - 1 + f.mantissa_bits;
  if (shift < 0 || (odd << shift) >= (1u << f.mantissa_bits)) throw std::logic_error("odd_times_pow2: not exact");
  return pattern(f, negative, 0, odd << shift);
}

// 448·2^k = 1.75·2^(8 + k).
std::uint16_t fp8_max_times_pow2(const Format16& f, int k) {
  return pattern(f, false, f.bias + 8 + k, 3u << (f.mantissa_bits - 2));
}

void fill_random(std::uint16_t* seg, std::int64_t n, const Format16& f, SplitMix64& rng, int lo, int hi) {
  for (std::int64_t i = 0; i < n; ++i) seg[i] = random_normal(f, rng, lo, hi);
}

// One 32-dim segment of edge class `cls` (see RowRecipe::kEdgeMix).
void edge_segment(std::uint16_t* seg, int cls, const Format16& f, SplitMix64& rng) {
  const auto at = [&] { return static_cast<std::int64_t>(rng.below(kSegmentDims)); };
  fill_random(seg, kSegmentDims, f, rng, -6, 2);
  const int k = f.pow2_k_min + static_cast<int>(rng.below(static_cast<std::uint64_t>(f.pow2_k_max - f.pow2_k_min + 1)));
  switch (cls) {
    case 0: seg[at()] = f.quiet_nan; break;
    case 1:
      seg[3] = f.negative_nan;
      seg[17] = f.signalling_nan;
      seg[30] = f.odd_nan;
      break;
    case 2: seg[at()] = f.pos_inf; break;
    case 3:
      seg[5] = f.neg_inf;
      seg[6] = f.quiet_nan;
      break;
    case 4:  // a block of zeros with negative zeros in it
      for (std::int64_t i = 0; i < kSegmentDims; ++i) seg[i] = (i % 3 == 0) ? 0x8000 : 0x0000;
      break;
    case 5:
      for (std::int64_t i = 0; i < kSegmentDims; ++i) seg[i] = 0x0000;
      break;
    case 6:
      for (std::int64_t i = 0; i < kSegmentDims; ++i) seg[i] = random_subnormal(f, rng);
      break;
    case 7:
    case 8:
    case 9: {  // amax = 448·2^k exactly, one ulp above, one ulp below
      fill_random(seg, kSegmentDims, f, rng, 8 + k - 6, 8 + k - 1);
      const std::uint16_t v = fp8_max_times_pow2(f, k);
      seg[at()] = static_cast<std::uint16_t>(cls == 7 ? v : cls == 8 ? v + 1 : v - 1) | (rng.coin() ? 0x8000 : 0);
      break;
    }
    case 10:  // an outlier over tiny normal values
      fill_random(seg, kSegmentDims, f, rng, -14, -10);
      seg[at()] = pattern(f, rng.coin(), f.bias + f.huge_exponent / 2, static_cast<std::uint32_t>(rng.next()));
      break;
    case 11: {  // amax 3.0 gives inv = 128: odd multiples of 2^-7 and 2^-8 land on e4m3 ties
      seg[0] = odd_times_pow2(f, false, 3, 0);
      for (std::uint32_t j = 0; j < 8; ++j) {
        seg[1 + j] = odd_times_pow2(f, j % 2 == 1, 2 * (8 + j) + 1, -7);  // 17..31 after scaling
        seg[9 + j] = odd_times_pow2(f, j % 2 == 0, 2 * (8 + j) + 1, -8);  // 8.5..15.5
        seg[17 + j] = odd_times_pow2(f, j % 2 == 1, 2 * j + 1, -17);      // subnormal-code ties
      }
      break;
    }
    case 12:  // an outlier over subnormals: their scaled values fall below fp32's normal range
      for (std::int64_t i = 0; i < kSegmentDims; ++i) seg[i] = random_subnormal(f, rng);
      seg[at()] = pattern(f, rng.coin(),
                          f.bias + 10 + static_cast<int>(rng.below(static_cast<std::uint64_t>(f.huge_exponent - 9))),
                          static_cast<std::uint32_t>(rng.next()));
      break;
    default: throw std::logic_error("edge_segment: unknown class");
  }
}

}  // namespace

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<std::uint16_t> make_row(RowRecipe recipe, Storage16 storage, std::uint64_t variant, SplitMix64& rng) {
  const Format16& f = format16(storage);
  std::vector<std::uint16_t> row(kDims);
  std::uint16_t* r = row.data();
  switch (recipe) {
    case RowRecipe::kRandom: fill_random(r, kDims, f, rng, -6, 2); break;
    case RowRecipe::kEdgeMix:
      for (std::int64_t s = 0; s < kDims / kSegmentDims; ++s)
        edge_segment(r + s * kSegmentDims, static_cast<int>((static_cast<std::uint64_t>(s) + variant) % kEdgeClasses),
                     f, rng);
      break;
    case RowRecipe::kHuge:
      for (auto& v : row) v = pattern(f, rng.coin(), f.max_exponent_field, static_cast<std::uint32_t>(rng.next()));
      break;
    case RowRecipe::kTiny:
      for (auto& v : row) v = random_subnormal(f, rng);
      break;
    case RowRecipe::kZero:
      for (std::size_t d = 0; d < row.size(); ++d) row[d] = (d % 97 == 5) ? 0x8000 : 0x0000;
      break;
    case RowRecipe::kRopeEdges: {
      fill_random(r, kDims, f, rng, -6, 2);
      const auto pair = [&](int j, std::uint16_t a, std::uint16_t b) {
        r[kNopeDims + 2 * j] = a;
        r[kNopeDims + 2 * j + 1] = b;
      };
      const std::uint16_t huge = pattern(f, false, f.max_exponent_field, 0x55);
      pair(1, f.quiet_nan, random_normal(f, rng, -2, 2));
      pair(5, random_normal(f, rng, -2, 2), f.pos_inf);
      pair(9, f.neg_inf, random_normal(f, rng, -2, 2));
      pair(13, 0x8000, 0x8000);
      pair(17, huge, static_cast<std::uint16_t>(huge | 0x8000));
      pair(21, random_subnormal(f, rng), random_subnormal(f, rng));
      pair(25, huge, random_normal(f, rng, -14, -12));
      pair(29, f.signalling_nan, f.negative_nan);
      break;
    }
    case RowRecipe::kPow2Blocks:
      for (std::int64_t s = 0; s < kDims / kSegmentDims; ++s) {
        const int k = f.pow2_k_min + static_cast<int>((static_cast<std::uint64_t>(s) * 5 + variant) %
                                                      static_cast<std::uint64_t>(f.pow2_k_max - f.pow2_k_min + 1));
        std::uint16_t* seg = r + s * kSegmentDims;
        fill_random(seg, kSegmentDims, f, rng, 8 + k - 6, 8 + k - 1);
        const std::uint16_t v = fp8_max_times_pow2(f, k);
        seg[(s * 7 + static_cast<std::int64_t>(variant)) % kSegmentDims] =
            static_cast<std::uint16_t>(s % 3 == 0   ? v
                                       : s % 3 == 1 ? v + 1
                                                    : v - 1);
      }
      break;
  }
  return row;
}

std::vector<float> make_cos_sin_table(std::int64_t max_pos, SplitMix64& rng) {
  std::vector<float> table(static_cast<std::size_t>(max_pos * kRopeDims));
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::uint32_t sign = rng.coin() ? 0x80000000u : 0u;
    const std::uint32_t exponent = 127u - static_cast<std::uint32_t>(rng.below(4));  // [2^-3, 2)
    const std::uint32_t bits = sign | (exponent << 23) | static_cast<std::uint32_t>(rng.next() & 0x7FFFFF);
    std::memcpy(&table[i], &bits, sizeof bits);
  }
  for (std::int64_t j = 0; j < kRopePairs; ++j) {  // row 0: the identity rotation
    table[static_cast<std::size_t>(j)] = 1.0f;
    table[static_cast<std::size_t>(kRopePairs + j)] = 0.0f;
  }
  return table;
}

std::vector<std::uint16_t> make_norm_weight(SplitMix64& rng) {
  const Format16& f = kBf16Format;
  std::vector<std::uint16_t> w(kDims);
  for (auto& v : w)
    v = pattern(f, false, f.bias - 1 + static_cast<int>(rng.below(2)), static_cast<std::uint32_t>(rng.next()));
  w[0] = 0x0000;    // a zero weight
  w[1] = 0xBF80;    // -1
  w[2] = 0x4780;    // 65536
  w[3] = 0x0001;    // the smallest subnormal
  w[460] = 0xC000;  // -2, in a RoPE dim
  return w;
}

}  // namespace kvc::golden_generator
