// record_codec.h: where every byte of a paged cache lives, and what it means (docs/contract.md §3).
//
// The codec is the one place that knows the four layouts: the ops write through its address
// functions, the comparator explains a differing byte with locate(), and the decoder turns any
// bytes (garbage included: NaN scales, odd pad bytes) back into fields without ever failing.
//   packed584 page: [bs x 576 data: 448 fp8 codes + 64 x 16-bit RoPE values][bs x 8 scales][pad]
//   packed528 page: [bs x 512 fp8 codes][bs x 16 scales][pad]
//   fp8_512 / bf16_512: row of token i at page + i * token_stride; bytes between rows and after
//   the last row of a page are padding.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc::oracle {

// A cache as the ops address it: byte offsets into the backing buffer.
struct PagedCacheView {
  RecordFormat format = RecordFormat::kPacked584;
  std::int64_t base_offset = 0;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;
  std::int64_t page_stride_bytes = 0;
  std::int64_t token_stride_bytes = 0;  // full caches only
  DType value_dtype = DType::kBF16;     // 16-bit values stored unquantized (f16 on the legacy f16 path)

  static PagedCacheView of(const CacheGeometry& g, RecordFormat f, DType value_dtype = DType::kBF16);
  const RecordLayout& layout() const { return layout_of(format); }
  std::int64_t page_offset(std::int64_t block) const { return base_offset + block * page_stride_bytes; }
  std::int64_t capacity() const { return num_blocks * block_size; }
};

// Byte offset of slot s's data region (codes / row), and of its first scale byte (packed only).
std::int64_t token_data_offset(const PagedCacheView& v, std::int64_t slot);
std::int64_t token_scale_offset(const PagedCacheView& v, std::int64_t slot);
// Offset of dim d's byte (fp8 code) or first byte (16-bit value) inside the token's data region.
std::int64_t dim_offset_in_data(RecordFormat f, int dim);

enum class Field : std::uint8_t {
  kFp8Code,       // e4m3 code of one dim
  kValue16,       // bf16 (or f16) value byte: packed584 RoPE dims, every bf16_512 dim
  kScale,         // UE8M0 byte of one block
  kScalePad,      // packed584 byte 7 of a scale group (always 0x00)
  kRowGap,        // full caches: bytes between a row's end and the next row
  kPagePadding,   // bytes after the dense part of a page
  kOutsideCache,  // before the first page or after the last
};
std::string_view field_name(Field f);

struct ByteLocation {
  Field field = Field::kOutsideCache;
  std::int64_t page = -1;
  std::int64_t index_in_page = -1;  // token index i within the page
  std::int64_t slot = -1;           // page * block_size + i
  int dim = -1;                     // kFp8Code, kValue16
  int byte_in_value = 0;            // kValue16: 0 = low byte
  int scale_block = -1;             // kFp8Code (packed) and kScale
};
ByteLocation locate(const PagedCacheView& v, std::int64_t backing_offset);

// All fields of one token's record, read from arbitrary bytes.
struct DecodedRecord {
  RecordFormat format;
  std::array<std::uint8_t, kHeadDim> codes{};      // valid for dims < layout.fp8_dims
  std::array<std::uint16_t, kHeadDim> values16{};  // packed584: dims 448..511; bf16_512: all
  std::array<std::uint8_t, 16> scales{};           // layout.scale_blocks entries
  std::uint8_t pad = 0;                            // packed584 only
  std::array<float, kHeadDim> dequantized{};       // what the record means as fp32
};
// fp8_scale multiplies fp8_512 codes (the per-tensor scale); ignored by other formats.
DecodedRecord decode_record(const std::vector<std::uint8_t>& backing, const PagedCacheView& v, std::int64_t slot,
                            float fp8_scale = 1.0f);

// One field's raw bits and meaning at a located byte, for reports:
// "fp8 0x3a = 1.25 x scale 2^-3 = 0.15625", "bf16 0x3f80 = 1", "scale 0x7c = 2^-3".
std::string describe_field(const std::vector<std::uint8_t>& backing, const PagedCacheView& v, const ByteLocation& loc,
                           float fp8_scale = 1.0f);

}  // namespace kvc::oracle
