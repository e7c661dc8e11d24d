// generator_constants.h: the numbers of docs/contract.md as the golden generator knows them.
//
// The generator is a second implementation of the contract and shares no code with the oracle,
// not even its constants header: every number it relies on is written here from the contract's
// text (the section is named beside each), so that a wrong constant in one implementation shows
// up as a byte difference against the other.
#pragma once

#include <cstdint>

namespace kvc::golden_generator {

inline constexpr int kContractVersion = 2;  // §1.1; recorded in every manifest

inline constexpr std::int64_t kDims = 512;                   // §1.1 HEAD_DIM
inline constexpr std::int64_t kNopeDims = 448;               // §1.1 NOPE_DIM
inline constexpr std::int64_t kRopeDims = 64;                // §1.1 ROPE_DIM
inline constexpr std::int64_t kRopePairs = 32;               // §2.6: 32 GPT-J pairs
inline constexpr std::int64_t kLanes = 32;                   // §1.3: one warp of 32 lanes per row
inline constexpr std::int64_t kDimsPerLane = 16;             // §1.3: lane L owns [16L, 16L + 16)
inline constexpr int kButterflyHalves[] = {16, 8, 4, 2, 1};  // §1.3: masks in this order

inline constexpr float kFp8Max = 448.0f;                     // §1.1 FP8_MAX, the clamp bound
inline constexpr std::uint32_t kAmaxFloorBits = 0x38D1B717;  // §1.1 AMAX_FLOOR = 1e-4f
inline constexpr int kUe8m0Bias = 127;                       // §2.3
inline constexpr int kUe8m0Inf = 0xFF;                       // §2.3: the scale byte of a block holding ±Inf
inline constexpr int kScalePadByte = 0x00;                   // §3.3: byte 7 of a packed584 scale group
inline constexpr int kCanonicalNan16 = 0x7FFF;               // §2.1: every NaN narrows to 0x7FFF (bf16 and fp16)
inline constexpr float kRmsInverseDims = 0x1p-9f;            // §2.4: 1/512, exact

// §1.2, §3.3, §3.4: the record of one token in each format.
enum class Format : std::uint8_t { kPacked584, kPacked528, kFp8_512, kBf16_512 };

struct FormatLayout {
  const char* name;
  const char* cache_dtype;     // case_fields dtype name of the cache tensor
  std::int64_t width;          // size(2) of the cache tensor, in elements
  std::int64_t element_bytes;  // of the cache dtype
  std::int64_t data_bytes;     // per token: the data region (packed) or the whole row
  std::int64_t scale_bytes;    // per token: the scale region, pad included (0: full caches)
  std::int64_t quant_dims;     // dims encoded as e4m3 with block scales ([0, quant_dims)); 0: none
  std::int64_t block_dims;     // dims per UE8M0 block
  bool packed;                 // paged regions: every token's data, then every token's scales
  bool kv_mxfp8;               // the op's flag that selects it (uint8 caches)
};

inline constexpr FormatLayout kLayouts[] = {
    {"packed584", "u8", 584, 1, 576, 8, 448, 64, true, false},
    {"packed528", "u8", 528, 1, 512, 16, 512, 32, true, true},
    {"fp8_512", "e4m3", 512, 1, 512, 0, 0, 0, false, false},
    {"bf16_512", "bf16", 512, 2, 1024, 0, 0, 0, false, false},
};

constexpr const FormatLayout& layout(Format f) { return kLayouts[static_cast<int>(f)]; }

}  // namespace kvc::golden_generator
