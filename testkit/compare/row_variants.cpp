// row_variants.cpp: alternative encodings of one KV row (see row_variants.h).
#include "testkit/compare/row_variants.h"

#include <cmath>
#include <utility>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/quantize.h"
#include "kvc/oracle/rope.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/store_rotated.h"
#include "kvc/oracle/ue8m0.h"

namespace kvc::testkit {
namespace {

// The contract's pattern with the products rounded on their own: fl(fl(a c) - fl(b s)).
oracle::RotatedPair rotate_mul_sub(float a, float b, float c, float s) {
  const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
  return {ac - bs, as + bc};
}

constexpr int kRopePairsPerLane = kDimsPerLane / 2;  // 8

// The dims of RoPE pair j under variant v (all use cos_j, sin_j): GPT-J (448 + 2j, 449 + 2j);
// NeoX over the 64 RoPE dims (448 + j, 480 + j); NeoX halves inside lane l = j / 8, k = j % 8:
// (448 + 16l + k, 456 + 16l + k).
std::pair<int, int> rope_pair_dims(RowVariant v, int j) {
  switch (v) {
    case RowVariant::kRopeNeox: return {kNopeDim + j, kNopeDim + kRopePairs + j};
    case RowVariant::kRopeNeoxInLane: {
      const int first = kNopeDim + (j / kRopePairsPerLane) * kDimsPerLane + j % kRopePairsPerLane;
      return {first, first + kRopePairsPerLane};
    }
    default: return {kNopeDim + 2 * j, kNopeDim + 2 * j + 1};
  }
}

// RoPE of dims 448..511 of `x` (row `row`'s position) as variant `v` pairs and rounds them.
void rotate_variant(const InsertCase& c, std::int64_t row, RowVariant v, float* x) {
  if (v != RowVariant::kRopeMulSub && v != RowVariant::kRopeNeox && v != RowVariant::kRopeNeoxInLane) {
    oracle::rope_at_row_position(c, row, x);
    return;
  }
  const std::int64_t pos = c.positions.load<std::int64_t>(row);
  float csc[kRopeDim];
  for (int j = 0; j < kRopeDim; ++j) csc[j] = c.cos_sin.load<float>(pos * kRopeDim + j);
  for (int j = 0; j < kRopePairs; ++j) {
    const auto [first, second] = rope_pair_dims(v, j);
    const oracle::RotatedPair r = v == RowVariant::kRopeMulSub
                                      ? rotate_mul_sub(x[first], x[second], csc[j], csc[kRopePairs + j])
                                      : oracle::rope_rotate_pair(x[first], x[second], csc[j], csc[kRopePairs + j]);
    x[first] = r.first;
    x[second] = r.second;
  }
}

// The e4m3 codes of row `row`'s record (its contract bytes already in `backing`) re-encoded
// without the clamp and with saturation off, from the values the oracle scales: packed formats
// the 16-bit rotated row times its block's inverse scale, fp8_512 the fp32 row times fl(1/s).
void requantize_without_saturation(const InsertCase& c, const oracle::PagedCacheView& view, std::int64_t row,
                                   const kvc::Profile& p, std::vector<std::uint8_t>& backing) {
  const std::int64_t slot = c.slots.load<std::int64_t>(row);
  if (slot < 0) return;
  const RecordLayout& l = view.layout();
  const std::int64_t data = oracle::token_data_offset(view, slot);
  auto put = [&](int d, float scaled) {
    backing[static_cast<std::size_t>(data + oracle::dim_offset_in_data(view.format, d))] =
        e4m3_without_saturation(scaled);
  };
  if (l.paged_regions) {
    std::uint16_t row16[kHeadDim];
    oracle::rotated_row16(c, row, p, row16);
    float y[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) y[d] = oracle::widen16(row16[d], c.kv.meta.dtype);
    for (int k = 0; k < l.scale_blocks; ++k) {
      const float* block = y + k * l.quant_block_dims;
      const oracle::BlockScale s = oracle::block_scale(block, l.quant_block_dims, oracle::scale_rules_of(p));
      for (int i = 0; i < l.quant_block_dims; ++i) put(k * l.quant_block_dims + i, block[i] * s.inverse);
    }
    return;
  }
  float x[kHeadDim];
  oracle::kv_row_before_rope(c, row, x);
  if (p.rope == kvc::RopePolicy::kRotate) oracle::rope_at_row_position(c, row, x);
  const float inv = 1.0f / c.fp8_scale.load<float>(0);
  for (int d = 0; d < kHeadDim; ++d) put(d, x[d] * inv);
}

void put16(std::vector<std::uint8_t>& b, std::int64_t off, std::uint16_t v) {
  b[static_cast<std::size_t>(off)] = static_cast<std::uint8_t>(v & 0xFF);
  b[static_cast<std::size_t>(off) + 1] = static_cast<std::uint8_t>(v >> 8);
}

}  // namespace

std::string_view describe_variant(RowVariant v) {
  switch (v) {
    case RowVariant::kContract: return "the contract's encoding";
    case RowVariant::kE4m3TiesAway: return "e4m3 ties rounded away from zero (the contract: to even)";
    case RowVariant::kBf16TiesAway: return "bf16 ties rounded away from zero (the contract: to even)";
    case RowVariant::kRopeMulSub:
      return "RoPE with separately rounded products, fl(fl(a*c) - fl(b*s)) (the contract: fma(a, c, -fl(b*s)))";
    case RowVariant::kRopeNeox:
      return "RoPE pairing dims (448+j, 480+j) as NeoX does (the contract: GPT-J pairs (448+2j, 449+2j))";
    case RowVariant::kRopeNeoxInLane:
      return "RoPE pairing dims (448+16l+k, 456+16l+k), NeoX halves inside each lane's 16 dims (the contract: "
             "GPT-J pairs (448+2j, 449+2j))";
    case RowVariant::kE4m3NoSaturation:
      return "e4m3 without saturation: NaN -> 0x7F, values past 448 -> NaN (the contract: clamp to [-448, 448] "
             "first, NaN -> 0xFE)";
    case RowVariant::kFp8ScaleMultiplied:
      return "fp8_scale applied the wrong way: x * fp8_scale (the contract: x * fl(1 / fp8_scale))";
    case RowVariant::kFp8ScaleDivided:
      return "fp8_scale divided per element: fl(x / fp8_scale) (the contract: x * fl(1 / fp8_scale))";
    case RowVariant::kBf16NanPayloadKept:
      return "bf16 NaN payloads kept: a NoPE NaN stored with its input bits (the contract: 0x7FFF)";
  }
  return "?";
}

bool variant_applies(RowVariant v, const InsertCase& c, const kvc::Profile& p) {
  const std::optional<RecordFormat> f = format_of(c);
  if (!f) return false;
  const bool rotates = p.rope == kvc::RopePolicy::kRotate;
  switch (v) {
    case RowVariant::kContract: return true;
    case RowVariant::kE4m3TiesAway: return layout_of(*f).fp8_dims > 0;
    case RowVariant::kBf16TiesAway: return rotates && c.kv.meta.dtype == DType::kBF16 && *f != RecordFormat::kFp8_512;
    case RowVariant::kRopeMulSub:
    case RowVariant::kRopeNeox:
    case RowVariant::kRopeNeoxInLane: return rotates;
    case RowVariant::kE4m3NoSaturation: return layout_of(*f).fp8_dims > 0;
    case RowVariant::kFp8ScaleMultiplied:
    case RowVariant::kFp8ScaleDivided: return *f == RecordFormat::kFp8_512;
    // With a fused kv_norm the NoPE values are computed, and a computed NaN carries no input payload.
    case RowVariant::kBf16NanPayloadKept: return *f == RecordFormat::kBf16_512 && !c.kv_norm_weight.present;
  }
  return false;
}

std::uint16_t float_to_bf16_ties_away(float x) {
  const std::uint32_t bits = oracle::bits_of(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return oracle::kBf16CanonicalNan;
  // Sign and magnitude: adding half an ulp of the kept part to the magnitude and truncating rounds
  // midpoints up in magnitude, i.e. away from zero; overflow carries into Inf as RNE does.
  return static_cast<std::uint16_t>((bits + 0x8000u) >> 16);
}

std::uint8_t e4m3_without_saturation(float v) {
  constexpr std::uint8_t kNan = 0x7F;
  constexpr float kOverflow = 464.0f;  // 448 + half an ulp: from here on RNE rounds past 448
  const std::uint32_t bits = oracle::bits_of(v);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kNan;  // canonicalised first: no sign
  if (std::fabs(v) > kOverflow) return static_cast<std::uint8_t>(((bits >> 24) & 0x80u) | kNan);
  return oracle::e4m3_encode_raw(v);  // |v| <= 464: RNE, (448, 464] to 448
}

void encode_row_variant(const InsertCase& c, const oracle::PagedCacheView& view, std::int64_t row, RowVariant v,
                        const kvc::Profile& p, std::vector<std::uint8_t>& backing) {
  oracle::OracleOptions o;
  o.profile = p;
  if (v == RowVariant::kContract || v == RowVariant::kE4m3TiesAway || v == RowVariant::kE4m3NoSaturation) {
    if (v == RowVariant::kE4m3TiesAway) o.mutation = oracle::OracleMutation::kTiesAwayFromZero;
    oracle::insert_kv_row(c, view, row, backing, o);
    if (v == RowVariant::kE4m3NoSaturation) requantize_without_saturation(c, view, row, p, backing);
    return;
  }
  const std::int64_t slot = c.slots.load<std::int64_t>(row);
  if (slot < 0) return;
  float x[kHeadDim];
  oracle::kv_row_before_rope(c, row, x);
  if (p.rope == kvc::RopePolicy::kRotate) rotate_variant(c, row, v, x);
  const DType dt = c.kv.meta.dtype;
  auto round16 = [&](float value) {
    return v == RowVariant::kBf16TiesAway ? float_to_bf16_ties_away(value) : oracle::narrow16(value, dt);
  };
  if (view.layout().paged_regions) {
    std::uint16_t row16[kHeadDim];
    for (int d = 0; d < kHeadDim; ++d) row16[d] = round16(x[d]);
    oracle::store_rotated_row(row16, dt, view, slot, backing, o);
    return;
  }
  const std::int64_t data = oracle::token_data_offset(view, slot);
  if (view.format == RecordFormat::kFp8_512) {
    const float s = c.fp8_scale.load<float>(0), inv = 1.0f / s;
    for (int d = 0; d < kHeadDim; ++d) {
      const float scaled = v == RowVariant::kFp8ScaleMultiplied ? x[d] * s
                           : v == RowVariant::kFp8ScaleDivided  ? x[d] / s
                                                                : x[d] * inv;
      backing[static_cast<std::size_t>(data + d)] = oracle::quantize(scaled, o);
    }
    return;
  }
  for (int d = 0; d < kHeadDim; ++d) {
    const bool kept = v == RowVariant::kBf16NanPayloadKept && d < kNopeDim && std::isnan(x[d]);
    put16(backing, data + 2 * d, kept ? c.kv.load<std::uint16_t>(row * kHeadDim + d) : round16(x[d]));
  }
}

}  // namespace kvc::testkit
