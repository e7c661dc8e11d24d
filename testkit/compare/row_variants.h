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
//                  GPT-J, in the contract's fma pattern.
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

enum class RowVariant : std::uint8_t { kContract = 0, kE4m3TiesAway, kBf16TiesAway, kRopeMulSub, kRopeNeox };
inline constexpr std::array<RowVariant, 4> kNumericVariants = {RowVariant::kE4m3TiesAway, RowVariant::kBf16TiesAway,
                                                               RowVariant::kRopeMulSub, RowVariant::kRopeNeox};

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

}  // namespace kvc::testkit
