// planted_defects.cpp: one deliberate defect per backend (see planted_defects.h).
#include "testkit/backends/oracle_backend.h"
#include "testkit/planted/planted_defects.h"

#include <cmath>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/store_rotated.h"
#include "kvc/resolved_case.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/planted/planted_backends.h"

namespace kvc::testkit {
namespace {

constexpr std::int64_t kPages = 3;
constexpr std::int64_t kBlockSize = 16;
constexpr std::int64_t kRows = 40;
constexpr std::int64_t kLiveSlots = 36;
constexpr std::int64_t kMaxPos = 64;
constexpr std::int64_t kRowGapBytes = 32;  // full caches: keeps every row 16-byte aligned
constexpr float kPlantedFp8Scale = 0.5f;   // a power of two: x * (1 / 0.5) is exact, so e4m3 ties occur
constexpr std::uint16_t kBf16PlusInf = 0x7F80, kBf16MinusInf = 0xFF80;
constexpr std::uint16_t kBf16QuietNan = 0x7FC0, kBf16NegativeNan = 0xFFC1;
// 448 * 2^-3 = 56: a block whose largest value is 56 has q = 56 / 448 = 2^-3 exactly.
constexpr float kPowerOfTwoBlockMax = 56.0f;
// cos = 1 + 2^-8, sin = 0: a * cos for a power of two a lies exactly halfway between two bf16s.
constexpr float kTieCos = 1.00390625f;
constexpr float kMulSubA = 1.5f;

kvc::Profile vllm_with(kvc::Policy policy) { return kvc::with_alternative(kvc::vllm_profile(), policy, 1); }

std::uint16_t bf16_bits(float x) { return oracle::float_to_bf16(x); }

void put16(std::vector<std::uint8_t>& b, std::int64_t off, std::uint16_t v) {
  b[static_cast<std::size_t>(off)] = static_cast<std::uint8_t>(v & 0xFF);
  b[static_cast<std::size_t>(off) + 1] = static_cast<std::uint8_t>(v >> 8);
}

// Byte offset of a 16-bit RoPE value (packed584, bf16_512) of dim d of a slot's record.
std::int64_t value16_offset(const oracle::PagedCacheView& v, std::int64_t slot, int d) {
  return oracle::token_data_offset(v, slot) + oracle::dim_offset_in_data(v.format, d);
}

// Rows t < M with a slot, in row order (the order the oracle writes them).
template <typename F>
void for_live_rows(const InsertCase& c, F f) {
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    if (s >= 0) f(t, s);
  }
}

// The planted RoPE patterns, written out here rather than taken from row_variants.h.
void rotate_planted(const InsertCase& c, std::int64_t row, bool neox, float* x) {
  const std::int64_t pos = c.positions.load<std::int64_t>(row);
  for (int j = 0; j < kRopePairs; ++j) {
    const float cs = c.cos_sin.load<float>(pos * kRopeDim + j),
                sn = c.cos_sin.load<float>(pos * kRopeDim + kRopePairs + j);
    const int i0 = neox ? kNopeDim + j : kNopeDim + 2 * j;
    const int i1 = neox ? kNopeDim + kRopePairs + j : i0 + 1;
    const float a = x[i0], b = x[i1];
    if (neox) {
      x[i0] = std::fma(a, cs, -(b * sn));
      x[i1] = std::fma(a, sn, b * cs);
    } else {
      const float ac = a * cs, bs = b * sn, as = a * sn, bc = b * cs;
      x[i0] = ac - bs;
      x[i1] = as + bc;
    }
  }
}

// Blocks whose q = max(amax, 1e-4) / 448 is an exact power of two get the exponent above the
// contract's, and their codes are quantized with it.
void raise_power_of_two_exponents(const InsertCase& c, std::vector<std::uint8_t>& backing) {
  const oracle::PagedCacheView view = view_of(c);
  const RecordLayout& l = view.layout();
  const DType dt = c.kv.meta.dtype;
  for_live_rows(c, [&](std::int64_t t, std::int64_t slot) {
    std::uint16_t row16[kHeadDim];
    oracle::rotated_row16(c, t, kvc::vllm_profile(), row16);
    for (int k = 0; k < l.scale_blocks; ++k) {
      float amax = 0.0f;
      bool finite = true;
      for (int d = k * l.quant_block_dims; d < (k + 1) * l.quant_block_dims; ++d) {
        const float y = oracle::widen16(row16[d], dt);
        if (std::isinf(y)) finite = false;
        if (!std::isnan(y)) amax = std::max(amax, std::fabs(y));
      }
      const float q = std::max(amax, kAmaxFloor) / kFp8Max;
      if (!finite || !std::isnormal(q) || (oracle::bits_of(q) & 0x7FFFFFu) != 0) continue;
      const int e = std::ilogb(q) + 1;
      backing[static_cast<std::size_t>(oracle::token_scale_offset(view, slot) + k)] =
          static_cast<std::uint8_t>(e + kUe8m0Bias);
      for (int d = k * l.quant_block_dims; d < (k + 1) * l.quant_block_dims; ++d)
        backing[static_cast<std::size_t>(oracle::token_data_offset(view, slot) +
                                         oracle::dim_offset_in_data(view.format, d))] =
            oracle::e4m3_encode(std::ldexp(oracle::widen16(row16[d], dt), -e));
    }
  });
}

void post_process(PlantedDefect d, const InsertCase& c, std::vector<std::uint8_t>& backing) {
  const oracle::PagedCacheView view = view_of(c);
  switch (d) {
    case PlantedDefect::kBf16TiesAway:
      for_live_rows(c, [&](std::int64_t t, std::int64_t slot) {
        float x[kHeadDim];
        oracle::kv_row_after_rope(c, t, x);
        for (int i = kNopeDim; i < kHeadDim; ++i) {
          const std::uint32_t bits = oracle::bits_of(x[i]);
          if (std::isnan(x[i]) || (bits & 0xFFFFu) != 0x8000u) continue;
          put16(backing, value16_offset(view, slot, i), static_cast<std::uint16_t>((bits >> 16) + 1));
        }
      });
      return;
    case PlantedDefect::kRopeMulSub:
    case PlantedDefect::kRopeNeox:
      for_live_rows(c, [&](std::int64_t t, std::int64_t slot) {
        float x[kHeadDim];
        oracle::kv_row_before_rope(c, t, x);
        rotate_planted(c, t, d == PlantedDefect::kRopeNeox, x);
        for (int i = kNopeDim; i < kHeadDim; ++i) put16(backing, value16_offset(view, slot, i), bf16_bits(x[i]));
      });
      return;
    case PlantedDefect::kExponentPlusOne: raise_power_of_two_exponents(c, backing); return;
    case PlantedDefect::kWriteAfterCache: {
      const std::int64_t end = view.page_offset(view.num_blocks);
      for (std::int64_t i = end; i < end + 16 && i < static_cast<std::int64_t>(backing.size()); ++i)
        backing[static_cast<std::size_t>(i)] = 0x5A;
      return;
    }
    case PlantedDefect::kFp8ScaleMultiplied: {
      const float scale = c.fp8_scale.load<float>(0);
      for_live_rows(c, [&](std::int64_t t, std::int64_t slot) {
        float x[kHeadDim];
        oracle::kv_row_after_rope(c, t, x);
        for (int i = 0; i < kHeadDim; ++i)
          backing[static_cast<std::size_t>(oracle::token_data_offset(view, slot) + i)] =
              oracle::e4m3_encode(x[i] * scale);
      });
      return;
    }
    case PlantedDefect::kFlippedCodeBit: {
      std::int64_t live = 0;
      for_live_rows(c, [&](std::int64_t, std::int64_t slot) {
        if (live++ % 7 == 0) backing[static_cast<std::size_t>(oracle::token_data_offset(view, slot) + 5)] ^= 0x40;
      });
      return;
    }
    default: return;
  }
}

// The copy of the case whose bytes the address defects write: slots moved on by one, or the
// pages addressed at the dense page size.
InsertCase misaddressed(PlantedDefect d, const InsertCase& c) {
  InsertCase m = c;
  if (d == PlantedDefect::kSlotPlusOne) {
    const std::int64_t capacity = c.cache.num_blocks * c.block_size;
    for (std::int64_t t = 0; t < m.num_inserted(); ++t) {
      const std::int64_t s = m.slots.load<std::int64_t>(t);
      if (s >= 0) m.slots.store<std::int64_t>(t, (s + 1) % capacity);
    }
  } else {
    const RecordLayout& l = resolve_or_throw(c).layout;
    const std::int64_t dense =
        l.paged_regions ? l.dense_page_bytes(c.block_size) : c.block_size * c.cache.token_stride_bytes();
    m.cache.stride0 = dense / c.cache.element_bytes();
  }
  return m;
}

std::uint16_t random_power_of_two_bf16(Rng& rng) {
  const auto sign = static_cast<std::uint16_t>((rng.bits() & 1u) << 15);
  const auto exponent = static_cast<std::uint16_t>(127 + rng.uniform(-5, 5));
  return static_cast<std::uint16_t>(sign | exponent << 7);
}

std::uint16_t random_tiny_bf16(Rng& rng) {
  const auto sign = static_cast<std::uint16_t>((rng.bits() & 1u) << 15);
  const auto exponent = static_cast<std::uint16_t>(127 - 20 - rng.uniform(0, 4));
  return static_cast<std::uint16_t>(sign | exponent << 7 | static_cast<std::uint16_t>(rng.bits() & 0x7Fu));
}

}  // namespace

std::string_view planted_defect_name(PlantedDefect d) {
  switch (d) {
    case PlantedDefect::kE4m3TiesAway: return "e4m3-ties-away";
    case PlantedDefect::kBf16TiesAway: return "bf16-ties-away";
    case PlantedDefect::kExponentPlusOne: return "exponent-plus-one";
    case PlantedDefect::kAmaxFloorAfter: return "amax-floor-after";
    case PlantedDefect::kClampOrderSglang: return "clamp-order-sglang";
    case PlantedDefect::kInfBlockSglang: return "inf-block-sglang";
    case PlantedDefect::kRopeNone: return "rope-none";
    case PlantedDefect::kRopeMulSub: return "rope-mul-sub";
    case PlantedDefect::kRopeNeox: return "rope-neox";
    case PlantedDefect::kSlotPlusOne: return "slot-plus-one";
    case PlantedDefect::kDensePageStride: return "dense-page-stride";
    case PlantedDefect::kPadByteOne: return "pad-byte-one";
    case PlantedDefect::kPadNotWritten: return "pad-not-written";
    case PlantedDefect::kWriteAfterCache: return "write-after-cache";
    case PlantedDefect::kFlippedCodeBit: return "flipped-code-bit";
    case PlantedDefect::kFp8ScaleMultiplied: return "fp8-scale-multiplied";
  }
  return "?";
}

MismatchClass expected_class(PlantedDefect d) {
  switch (d) {
    case PlantedDefect::kE4m3TiesAway:
    case PlantedDefect::kBf16TiesAway: return MismatchClass::kRoundingTie;
    case PlantedDefect::kExponentPlusOne:
    case PlantedDefect::kAmaxFloorAfter: return MismatchClass::kScaleExponent;
    case PlantedDefect::kClampOrderSglang:
    case PlantedDefect::kInfBlockSglang: return MismatchClass::kSaturationNan;
    case PlantedDefect::kRopeNone:
    case PlantedDefect::kRopeMulSub:
    case PlantedDefect::kRopeNeox: return MismatchClass::kRopePattern;
    case PlantedDefect::kSlotPlusOne:
    case PlantedDefect::kDensePageStride: return MismatchClass::kWrongAddress;
    case PlantedDefect::kPadByteOne:
    case PlantedDefect::kPadNotWritten: return MismatchClass::kPadByte;
    case PlantedDefect::kWriteAfterCache: return MismatchClass::kUntouchedRegion;
    case PlantedDefect::kFlippedCodeBit: return MismatchClass::kUnexplained;
    case PlantedDefect::kFp8ScaleMultiplied: return MismatchClass::kTensorScale;
  }
  return MismatchClass::kUnexplained;
}

bool planted_defect_applies(PlantedDefect d, RecordFormat f) {
  switch (d) {
    case PlantedDefect::kE4m3TiesAway:
    case PlantedDefect::kClampOrderSglang: return f != RecordFormat::kBf16_512;
    case PlantedDefect::kBf16TiesAway:
    case PlantedDefect::kRopeMulSub:
    case PlantedDefect::kRopeNeox: return f == RecordFormat::kPacked584 || f == RecordFormat::kBf16_512;
    case PlantedDefect::kExponentPlusOne:
    case PlantedDefect::kAmaxFloorAfter:
    case PlantedDefect::kInfBlockSglang: return is_packed(f);
    case PlantedDefect::kPadByteOne:
    case PlantedDefect::kPadNotWritten: return f == RecordFormat::kPacked584;
    case PlantedDefect::kFp8ScaleMultiplied: return f == RecordFormat::kFp8_512;
    case PlantedDefect::kRopeNone:
    case PlantedDefect::kSlotPlusOne:
    case PlantedDefect::kDensePageStride:
    case PlantedDefect::kWriteAfterCache:
    case PlantedDefect::kFlippedCodeBit: return true;
  }
  return false;
}

InsertCase planted_case(PlantedDefect d, RecordFormat f, std::uint64_t seed) {
  Rng rng(seed * 7919u + static_cast<std::uint64_t>(d) * 131u + static_cast<std::uint64_t>(f));
  CacheShape shape;
  shape.format = f;
  shape.num_blocks = kPages;
  shape.block_size = kBlockSize;
  shape.page_padding_bytes = upstream_page_padding_bytes(f, kBlockSize);
  if (!is_packed(f)) shape.row_gap_bytes = kRowGapBytes;
  KvInputs in;
  in.kv = random_bf16_rows(rng, kRows);
  in.cos_sin = random_cos_sin(rng, kMaxPos);
  in.slots = rng.distinct(kPages * kBlockSize, kLiveSlots);
  in.slots[3] = -1;
  for (std::int64_t t = 0; t < kRows; ++t) in.positions.push_back(rng.uniform(0, kMaxPos - 1));
  in.fp8_scale = kPlantedFp8Scale;
  auto at = [&](std::int64_t row, int dim) -> std::uint16_t& {
    return in.kv[static_cast<std::size_t>(row * kHeadDim + dim)];
  };
  const RecordLayout& l = layout_of(f);
  for (std::int64_t t = 0; t < kRows; ++t) {
    switch (d) {
      case PlantedDefect::kClampOrderSglang:
        if (t % 3 == 0) at(t, 3) = kBf16QuietNan;
        if (t % 3 == 1) at(t, 100) = kBf16NegativeNan;
        break;
      case PlantedDefect::kInfBlockSglang:
        if (t % 3 == 0) at(t, 10) = kBf16PlusInf;
        if (t % 3 == 1) at(t, 200) = kBf16MinusInf;
        break;
      case PlantedDefect::kAmaxFloorAfter:
        // Block 1 of tiny values (amax far below 448 * 2^-14), and an all-zero block 3.
        for (int i = l.quant_block_dims; i < 2 * l.quant_block_dims; ++i) at(t, i) = random_tiny_bf16(rng);
        for (int i = 3 * l.quant_block_dims; i < 4 * l.quant_block_dims; ++i) at(t, i) = 0;
        break;
      case PlantedDefect::kExponentPlusOne:
        // Block 1's maximum 448 * 2^-3 (N(0,1) values stay below it): q = 2^-3 exactly.
        if (t % 2 == 0)
          at(t, l.quant_block_dims + 5) = bf16_bits(t % 4 == 0 ? kPowerOfTwoBlockMax : -kPowerOfTwoBlockMax);
        break;
      case PlantedDefect::kBf16TiesAway:
        for (int i = kNopeDim; i < kHeadDim; ++i) at(t, i) = random_power_of_two_bf16(rng);
        break;
      case PlantedDefect::kRopeMulSub:
        // Every other row: pairs (1.5, 1.0), which the table below turns into bf16-visible
        // differences between the two roundings.
        if (t % 2 == 0)
          for (int j = 0; j < kRopePairs; ++j) {
            at(t, kNopeDim + 2 * j) = bf16_bits(kMulSubA);
            at(t, kNopeDim + 2 * j + 1) = bf16_bits(1.0f);
          }
        break;
      default: break;
    }
  }
  if (d == PlantedDefect::kRopeMulSub) {
    // With a = 1.5, c = 1 + 3 * 2^-23: a c = 1.5 + 4.5 ulp is inexact (fl gives 1.5 + 4 ulp); with
    // b = 1, s = fl(a c) - M for the bf16 midpoint M = 2^-10 + 2^-18: separately rounded products
    // give M exactly (a tie, rounded to even: 2^-10), the fma gives M + 2^-24 (rounded up).
    const float cos_value = oracle::float_of(0x3F800003u);
    const float sin_value = (kMulSubA * cos_value) - (0x1p-10f + 0x1p-18f);
    for (std::int64_t p = 0; p < kMaxPos; ++p)
      for (int j = 0; j < kRopePairs; ++j) {
        in.cos_sin[static_cast<std::size_t>(p * kRopeDim + j)] = cos_value;
        in.cos_sin[static_cast<std::size_t>(p * kRopeDim + kRopePairs + j)] = sin_value;
      }
  }
  if (d == PlantedDefect::kBf16TiesAway) {
    for (std::int64_t p = 0; p < kMaxPos; ++p)
      for (int j = 0; j < kRopePairs; ++j) {
        in.cos_sin[static_cast<std::size_t>(p * kRopeDim + j)] = kTieCos;
        in.cos_sin[static_cast<std::size_t>(p * kRopeDim + kRopePairs + j)] = 0.0f;
      }
  }
  return make_kv_only_case(shape, in);
}

std::string DefectBackend::name() const { return "planted[" + std::string(planted_defect_name(defect_)) + "]"; }

Status DefectBackend::run(const InsertCase& c, InsertOutputs& out) {
  oracle::OracleOptions o;
  switch (defect_) {
    case PlantedDefect::kE4m3TiesAway:
      o.mutation = oracle::OracleMutation::kTiesAwayFromZero;
      return OracleBackend(o).run(c, out);
    case PlantedDefect::kPadByteOne:
      o.mutation = oracle::OracleMutation::kScalePadOne;
      return OracleBackend(o).run(c, out);
    case PlantedDefect::kAmaxFloorAfter:
      return PlantedBackend(vllm_with(kvc::Policy::kFloorPlacement), kvc::vllm_profile()).run(c, out);
    case PlantedDefect::kClampOrderSglang:
      return PlantedBackend(vllm_with(kvc::Policy::kClampOrder), kvc::vllm_profile()).run(c, out);
    case PlantedDefect::kInfBlockSglang:
      return PlantedBackend(vllm_with(kvc::Policy::kInfBlock), kvc::vllm_profile()).run(c, out);
    case PlantedDefect::kRopeNone:
      return PlantedBackend(vllm_with(kvc::Policy::kRope), kvc::vllm_profile()).run(c, out);
    case PlantedDefect::kPadNotWritten:
      return PlantedBackend(vllm_with(kvc::Policy::kPadByte), kvc::vllm_profile()).run(c, out);
    case PlantedDefect::kSlotPlusOne:
    case PlantedDefect::kDensePageStride: {
      InsertOutputs probe = out;  // validation of the case as given, on a copy
      if (const Status s = OracleBackend().run(c, probe); !s.ok()) return s;
      oracle::OracleOptions contract;
      contract.level = ValidationLevel::kContract;  // the moved slots may collide: last writer wins
      return OracleBackend(contract).run(misaddressed(defect_, c), out);
    }
    default: break;
  }
  const Status s = OracleBackend().run(c, out);
  if (s.ok()) post_process(defect_, c, out.cache);
  return s;
}

}  // namespace kvc::testkit
