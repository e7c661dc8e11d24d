// planted_defects.h: backends with one deliberate defect each, and the cases that expose it, to
// show that the mismatch classifier (mismatch_classes.h) names every class it claims to.
//
// Each defect is written the simplest way that produces it, apart from the classifier's own
// hypotheses where that is possible: the oracle's mutants (ties away from zero, pad byte 0x01),
// the oracle under another profile (the policies of docs/contract.md §6, through PlantedBackend),
// the oracle on a copy of the case with its slots or page stride changed, or the oracle's bytes
// rewritten afterwards from the row's own values (bf16 ties and RoPE patterns on the formats that
// store the rotated dims as 16-bit values, an exponent raised by one at exact powers of two, a
// write past the cache, a flipped code bit, fp8_512 codes of x * fp8_scale). Every backend
// declares the contract's profile.
//
// planted_case() builds a small generated case (three padded pages, random rows and table, a -1
// slot, fp8 scale 0.5 so that e4m3 ties occur) with the edge values the defect needs: NaN for
// the clamp order, +-Inf for the Inf-block policy, tiny blocks for the amax floor, block maxima
// of 448 * 2^k for the exponent, RoPE inputs at bf16 midpoints for the bf16 ties.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "testkit/backends/backend.h"
#include "testkit/compare/mismatch_classes.h"

namespace kvc::testkit {

enum class PlantedDefect : std::uint8_t {
  kE4m3TiesAway = 0,    // oracle mutant: e4m3 ties away from zero
  kBf16TiesAway,        // RoPE dims at bf16 midpoints rounded away from zero (packed584, bf16_512)
  kExponentPlusOne,     // blocks whose q is an exact power of two get E + 1, codes requantized
  kAmaxFloorAfter,      // profile: the 1e-4 floor after dividing by 448
  kClampOrderSglang,    // profile: NaN -> 0x7E
  kInfBlockSglang,      // profile: inv = -Inf in a block holding +-Inf
  kRopeNone,            // profile: no rotation
  kRopeMulSub,          // RoPE products rounded separately (packed584, bf16_512)
  kRopeNeox,            // NeoX pairing (packed584, bf16_512)
  kSlotPlusOne,         // every row written to slot + 1
  kDensePageStride,     // pages addressed at the dense page size
  kPadByteOne,          // oracle mutant: pad byte 0x01
  kPadNotWritten,       // profile: pad byte left as it was
  kWriteAfterCache,     // 16 bytes written past the cache's last page
  kFlippedCodeBit,      // bit 6 of one byte of every 7th live record flipped: nothing explains it
  kFp8ScaleMultiplied,  // fp8_512: every dim multiplied by fp8_scale instead of by its reciprocal
};
inline constexpr std::array<PlantedDefect, 16> kAllPlantedDefects = {
    PlantedDefect::kE4m3TiesAway,      PlantedDefect::kBf16TiesAway,     PlantedDefect::kExponentPlusOne,
    PlantedDefect::kAmaxFloorAfter,    PlantedDefect::kClampOrderSglang, PlantedDefect::kInfBlockSglang,
    PlantedDefect::kRopeNone,          PlantedDefect::kRopeMulSub,       PlantedDefect::kRopeNeox,
    PlantedDefect::kSlotPlusOne,       PlantedDefect::kDensePageStride,  PlantedDefect::kPadByteOne,
    PlantedDefect::kPadNotWritten,     PlantedDefect::kWriteAfterCache,  PlantedDefect::kFlippedCodeBit,
    PlantedDefect::kFp8ScaleMultiplied};

// "e4m3-ties-away", ...: test names and reports.
std::string_view planted_defect_name(PlantedDefect d);
// The class the classifier must give every differing site of the defect.
MismatchClass expected_class(PlantedDefect d);
// Whether the defect can show in format f (and so has a planted test there).
bool planted_defect_applies(PlantedDefect d, RecordFormat f);

// A generated KV-only case of format f with the inputs the defect needs.
InsertCase planted_case(PlantedDefect d, RecordFormat f, std::uint64_t seed = 1);

class DefectBackend final : public Backend {
 public:
  explicit DefectBackend(PlantedDefect d) : defect_(d) {}
  std::string name() const override;  // "planted[e4m3-ties-away]"
  // Validates like the oracle (strict), then writes the defective bytes.
  Status run(const InsertCase& c, InsertOutputs& out) override;

 private:
  PlantedDefect defect_;
};

}  // namespace kvc::testkit
