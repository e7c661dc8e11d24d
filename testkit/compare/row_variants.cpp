// row_variants.cpp: alternative encodings of one KV row (see row_variants.h).
#include "testkit/compare/row_variants.h"

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/quantize.h"
#include "kvc/oracle/rope.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/store_rotated.h"

namespace kvc::testkit {
namespace {

// The contract's pattern with the products rounded on their own: fl(fl(a c) - fl(b s)).
oracle::RotatedPair rotate_mul_sub(float a, float b, float c, float s) {
  const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
  return {ac - bs, as + bc};
}

// RoPE of dims 448..511 of `x` (row `row`'s position) as variant `v` pairs and rounds them.
void rotate_variant(const InsertCase& c, std::int64_t row, RowVariant v, float* x) {
  if (v != RowVariant::kRopeMulSub && v != RowVariant::kRopeNeox) {
    oracle::rope_at_row_position(c, row, x);
    return;
  }
  const std::int64_t pos = c.positions.load<std::int64_t>(row);
  float csc[kRopeDim];
  for (int j = 0; j < kRopeDim; ++j) csc[j] = c.cos_sin.load<float>(pos * kRopeDim + j);
  for (int j = 0; j < kRopePairs; ++j) {
    // GPT-J pairs (448 + 2j, 449 + 2j); NeoX pairs (448 + j, 480 + j). Both use cos_j, sin_j.
    const int first = v == RowVariant::kRopeNeox ? kNopeDim + j : kNopeDim + 2 * j;
    const int second = v == RowVariant::kRopeNeox ? kNopeDim + kRopePairs + j : first + 1;
    const oracle::RotatedPair r = v == RowVariant::kRopeNeox
                                      ? oracle::rope_rotate_pair(x[first], x[second], csc[j], csc[kRopePairs + j])
                                      : rotate_mul_sub(x[first], x[second], csc[j], csc[kRopePairs + j]);
    x[first] = r.first;
    x[second] = r.second;
  }
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
    case RowVariant::kRopeNeox: return rotates;
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

void encode_row_variant(const InsertCase& c, const oracle::PagedCacheView& view, std::int64_t row, RowVariant v,
                        const kvc::Profile& p, std::vector<std::uint8_t>& backing) {
  oracle::OracleOptions o;
  o.profile = p;
  if (v == RowVariant::kContract || v == RowVariant::kE4m3TiesAway) {
    if (v == RowVariant::kE4m3TiesAway) o.mutation = oracle::OracleMutation::kTiesAwayFromZero;
    oracle::insert_kv_row(c, view, row, backing, o);
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
    const float inv = 1.0f / c.fp8_scale.load<float>(0);
    for (int d = 0; d < kHeadDim; ++d) backing[static_cast<std::size_t>(data + d)] = oracle::quantize(x[d] * inv, o);
    return;
  }
  for (int d = 0; d < kHeadDim; ++d) put16(backing, data + 2 * d, round16(x[d]));
}

}  // namespace kvc::testkit
