// row_variants.h: one KV row encoded the way a kernel with a known numeric difference would.
//
// The contract fixes every rounding of a record (docs/contract.md §2-3); kernels that differ from
// it tend to differ in a few recognisable ways. Each variant here is one such way, applied to one
// row on top of an implementation profile, everything else as the oracle does it:
//   kE4m3TiesAway  e4m3 midpoints rounded away from zero instead of to even (the oracle's
//                  ties-away mutant encoder);
//   kBf16TiesAway  the fp32 -> bf16 rounding of the rotated row (packed formats: before
//                  quantization; bf16_512: the stored values) with midpoints away from zero;
//   kRopeMulSub    RoPE as a' = fl(fl(a c) - fl(b s)), b' = fl(fl(a s) + fl(b c)): the products
//                  rounded separately instead of the contract's fma pattern;
//   kRopeNeox      RoPE pairing dim 448 + j with 480 + j (NeoX) instead of the adjacent pairs of
//                  GPT-J, in the contract's fma pattern;
//   kRopeNeoxInLane  the NeoX halves inside each lane's 16 RoPE dims (docs/contract.md §1.3: lane
//                  L holds dims 16L..16L+15): pair (448+16l+k, 456+16l+k), k = 0..7, rotated with
//                  the cos/sin of the lane's k-th GPT-J pair, j = 8l + k; what a kernel that
//                  mixes up the pairing of the values it holds writes;
//   kE4m3NoSaturation  e4m3 without the clamp and with saturation off (CUDA's __NV_NOSAT): a NaN
//                  becomes 0x7F, a value that rounds past 448 (|v| > 464, Inf included) NaN with
//                  its sign (0x7F / 0xFF), instead of -448 and +-448;
//   kFp8ScaleMultiplied  fp8_512: each dim multiplied by fp8_scale, fl(x * s), instead of by its
//                  reciprocal, fl(x * fl(1/s)): the per-tensor scale applied the wrong way;
//   kFp8ScaleDivided  fp8_512: each dim divided by fp8_scale, fl(x / s): one rounding where the
//                  contract has two (the reciprocal, then the product);
//   kBf16NanPayloadKept  bf16_512: a NaN in a NoPE dim stored with its input bits (payload and
//                  sign, as contract version 1 had it) instead of 0x7FFF (docs/contract.md §3.6).
// The mismatch classifier (mismatch_classes.h) re-encodes a differing record with each variant to
// name what explains it; the planted-defect backends (planted_defects.h) write them on purpose.
// A variant that cannot change the row under the profile (a RoPE or bf16 variant when the profile
// does not rotate, bf16 ties of an fp16 row) is not applicable. Cost: one row's encoding.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "kvc/oracle/record_codec.h"

namespace kvc::testkit {

enum class RowVariant : std::uint8_t {
  kContract = 0,
  kE4m3TiesAway,
  kBf16TiesAway,
  kRopeMulSub,
  kRopeNeox,
  kRopeNeoxInLane,
  kE4m3NoSaturation,
  kFp8ScaleMultiplied,
  kFp8ScaleDivided,
  kBf16NanPayloadKept,
};
inline constexpr std::array<RowVariant, 9> kNumericVariants = {
    RowVariant::kE4m3TiesAway,       RowVariant::kBf16TiesAway,    RowVariant::kRopeMulSub,
    RowVariant::kRopeNeox,           RowVariant::kRopeNeoxInLane,  RowVariant::kE4m3NoSaturation,
    RowVariant::kFp8ScaleMultiplied, RowVariant::kFp8ScaleDivided, RowVariant::kBf16NanPayloadKept};

// "e4m3 ties rounded away from zero", "RoPE with mul/sub instead of fma", ...
std::string_view describe_variant(RowVariant v);

// Whether the variant can change row encodings of this case under profile p.
bool variant_applies(RowVariant v, const InsertCase& c, const kvc::Profile& p);

// Encodes row `row` of an accepted insert case into `backing` (the record of its slot; nothing for
// a negative slot) as the oracle under `p` does, except for `v`.
void encode_row_variant(const InsertCase& c, const oracle::PagedCacheView& view, std::int64_t row, RowVariant v,
                        const kvc::Profile& p, std::vector<std::uint8_t>& backing);

// The bf16 rounding of kBf16TiesAway: nearest, midpoints away from zero; NaN -> 0x7FFF.
std::uint16_t float_to_bf16_ties_away(float x);

// The e4m3 encoding of kE4m3NoSaturation: CUDA's __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E4M3)
// with no clamp in front: NaN -> 0x7F, |v| > 464 (Inf included) -> 0x7F with v's sign, else RNE.
std::uint8_t e4m3_without_saturation(float v);

}  // namespace kvc::testkit
