// contract.h: the numeric contract's constants and the record-format table (docs/contract.md §1, §3).
//
// This is the vocabulary every part of kvconform speaks: the oracle, the kernels, the testkit and
// the fuzzers include it; it holds plain data only, no arithmetic. A number that appears in the
// contract appears here once, by name.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kvc {

// Version 2 (docs/contract.md, "Changes from version 1"): bf16_512 NoPE dims are stored through
// bf() (NaN -> 0x7FFF), the legacy op reads q_in interleaved when it writes q_out interleaved, and
// the approximate-rsqrt allowance is stated on r. Case files record the version they were made under.
// Version 3 (docs/contract.md, "Changes from version 2"): the stacked op's declared policies (RoPE
// contraction, K-norm reduction and reciprocal, cache_loc); no insert-op byte changed.
inline constexpr int kContractVersion = 3;
// The oldest version whose insert-op cases (and golden fixtures) mean the same under this one:
// a file of a version in [kInsertMeaningSinceVersion, kContractVersion] is read as is.
inline constexpr int kInsertMeaningSinceVersion = 2;
// The oldest version that fixes the stacked op's order of operations (§4.5): a stacked case file
// of a version in [kStackedOrderSinceVersion, kContractVersion] replays; version 2 files hold
// under the contract's stacked policies.
inline constexpr int kStackedOrderSinceVersion = 2;

inline constexpr int kHeadDim = 512;  // bf16 per KV row / per Q head
inline constexpr int kNopeDim = 448;  // dims [0, 448) are never rotated
inline constexpr int kRopeDim = 64;   // dims [448, 512) are rotated (GPT-J pairs)
inline constexpr int kRopePairs = kRopeDim / 2;

// Execution model that fixes the order of operations: one warp per row, lane L owns 16 dims.
inline constexpr int kWarpLanes = 32;
inline constexpr int kDimsPerLane = kHeadDim / kWarpLanes;
inline constexpr int kButterflyMasks[] = {16, 8, 4, 2, 1};

inline constexpr float kFp8Max = 448.0f;    // e4m3fn largest finite
inline constexpr float kAmaxFloor = 1e-4f;  // lower bound on a block's absmax
inline constexpr int kUe8m0Bias = 127;
inline constexpr std::uint8_t kUe8m0Nan = 0xFF;
inline constexpr std::uint8_t kScalePadByte = 0x00;  // byte 7 of the V4 scale group
inline constexpr std::uint8_t kE4m3NegMax = 0xFE;    // code for -448: where a clamped NaN lands

inline constexpr int kTokenCutoff = 1024;  // legacy grid switch; bytes must not depend on it
inline constexpr std::array<int, 6> kSupportedHeadPadding = {0, 8, 16, 32, 64, 128};
inline constexpr std::int64_t kMaxPackedPageStride = (std::int64_t{1} << 31) - 1;
inline constexpr int kAlignment = 16;  // bytes: vector loads/stores of the kernels

// How a kernel computes the r = rsqrt(...) of an RMSNorm row (docs/contract.md §2, §6). The contract
// is correctly rounded; a kernel that uses the hardware approximation declares kApproximate and
// each of its norm rows must then equal the oracle's bytes for that row computed with some r'
// within kApproxRsqrtMaxUlps fp32 ulps of the correctly rounded r.
enum class RsqrtMode : std::uint8_t { kCorrectlyRounded = 0, kApproximate = 1 };
inline constexpr int kApproxRsqrtMaxUlps = 2;

// The four cache formats. Stable numbering: it is written into case files.
enum class RecordFormat : std::uint8_t {
  kPacked584 = 0,  // V4: 7x64 NoPE dims fp8 + 64 bf16 RoPE dims + 8 scale bytes
  kPacked528 = 1,  // V4.1 "kv_mxfp8": 16x32 dims fp8 + 16 scale bytes
  kFp8_512 = 2,    // full cache, one e4m3 byte per dim, per-tensor scale
  kBf16_512 = 3,   // full cache, bf16 per dim
};
inline constexpr std::array<RecordFormat, 4> kAllFormats = {RecordFormat::kPacked584, RecordFormat::kPacked528,
                                                            RecordFormat::kFp8_512, RecordFormat::kBf16_512};

// Element types that tensors of the contract may have.
enum class DType : std::uint8_t { kBF16 = 0, kF16 = 1, kF32 = 2, kI64 = 3, kU8 = 4, kE4M3 = 5, kI32 = 6 };

constexpr int dtype_size(DType t) {
  switch (t) {
    case DType::kBF16:
    case DType::kF16: return 2;
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8:
    case DType::kE4M3: return 1;
  }
  return 0;
}

// How a format lays a token out inside a page (packed) or a row (full caches).
struct RecordLayout {
  RecordFormat format;
  std::string_view name;
  DType cache_dtype;     // dtype of the cache tensor
  bool kv_mxfp8;         // the op's flag that selects this format for a uint8 cache
  bool paged_regions;    // packed: all tokens' data, then all tokens' scales, per page
  int record_width;      // size(2) of the cache tensor, in elements of cache_dtype
  int data_bytes;        // per token: fp8 codes (+ bf16 RoPE for V4), or the full row
  int scale_bytes;       // per token: UE8M0 bytes incl. pad (0 for full caches)
  int quant_block_dims;  // dims per UE8M0 scale (0: no block scales)
  int scale_blocks;      // real scales per token
  int fp8_dims;          // dims stored as e4m3 codes ([0, fp8_dims))
  int record_bytes() const { return data_bytes + scale_bytes; }
  // Bytes of one page that the format defines; the rest of a padded page is never written.
  std::int64_t dense_page_bytes(std::int64_t block_size) const {
    return block_size * static_cast<std::int64_t>(record_bytes());
  }
};

inline constexpr std::array<RecordLayout, 4> kRecordLayouts = {{
    {RecordFormat::kPacked584, "packed584", DType::kU8, false, true, 584, 576, 8, 64, 7, kNopeDim},
    {RecordFormat::kPacked528, "packed528", DType::kU8, true, true, 528, 512, 16, 32, 16, kHeadDim},
    {RecordFormat::kFp8_512, "fp8_512", DType::kE4M3, false, false, 512, 512, 0, 0, 0, kHeadDim},
    {RecordFormat::kBf16_512, "bf16_512", DType::kBF16, false, false, 512, 1024, 0, 0, 0, 0},
}};
static_assert(kRecordLayouts.size() == kAllFormats.size(), "one layout per format");

constexpr const RecordLayout& layout_of(RecordFormat f) { return kRecordLayouts[static_cast<std::size_t>(f)]; }
constexpr bool is_packed(RecordFormat f) { return layout_of(f).paged_regions; }

}  // namespace kvc
