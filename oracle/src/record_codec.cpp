// record_codec.cpp: layouts, locate and decode (see record_codec.h).
#include "kvc/oracle/record_codec.h"

#include <cmath>
#include <cstdio>

#include "kvc/hex_text.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/storage16.h"
#include "kvc/oracle/ue8m0.h"

namespace kvc::oracle {
namespace {

std::uint16_t load16(const std::vector<std::uint8_t>& b, std::int64_t off) {
  if (off < 0 || off + 1 >= static_cast<std::int64_t>(b.size())) return 0;
  return static_cast<std::uint16_t>(b[static_cast<std::size_t>(off)] | (b[static_cast<std::size_t>(off) + 1] << 8));
}
std::uint8_t load8(const std::vector<std::uint8_t>& b, std::int64_t off) {
  if (off < 0 || off >= static_cast<std::int64_t>(b.size())) return 0;
  return b[static_cast<std::size_t>(off)];
}
std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

PagedCacheView PagedCacheView::of(const CacheGeometry& g, RecordFormat f, DType value_dtype) {
  PagedCacheView v;
  v.format = f;
  v.base_offset = g.offset_bytes;
  v.num_blocks = g.num_blocks;
  v.block_size = g.block_size;
  v.page_stride_bytes = g.page_stride_bytes();
  v.token_stride_bytes = g.token_stride_bytes();
  v.value_dtype = value_dtype;
  return v;
}

std::int64_t token_data_offset(const PagedCacheView& v, std::int64_t slot) {
  const std::int64_t block = slot / v.block_size, i = slot % v.block_size;
  const RecordLayout& l = v.layout();
  return v.page_offset(block) + i * (l.paged_regions ? l.data_bytes : v.token_stride_bytes);
}

std::int64_t token_scale_offset(const PagedCacheView& v, std::int64_t slot) {
  const std::int64_t block = slot / v.block_size, i = slot % v.block_size;
  const RecordLayout& l = v.layout();
  return v.page_offset(block) + v.block_size * l.data_bytes + i * l.scale_bytes;
}

std::int64_t dim_offset_in_data(RecordFormat f, int dim) {
  const RecordLayout& l = layout_of(f);
  if (dim < l.fp8_dims) return dim;
  return l.fp8_dims + 2 * (dim - l.fp8_dims);  // 16-bit values follow the codes, little-endian
}

std::string_view field_name(Field f) {
  switch (f) {
    case Field::kFp8Code: return "fp8 code";
    case Field::kValue16: return "16-bit value";
    case Field::kScale: return "scale";
    case Field::kScalePad: return "scale pad";
    case Field::kRowGap: return "row gap";
    case Field::kPagePadding: return "page padding";
    case Field::kOutsideCache: return "outside the cache";
  }
  return "?";
}

ByteLocation locate(const PagedCacheView& v, std::int64_t off) {
  ByteLocation loc;
  const std::int64_t rel = off - v.base_offset;
  if (rel < 0 || v.page_stride_bytes <= 0 || rel >= v.num_blocks * v.page_stride_bytes) return loc;
  loc.page = rel / v.page_stride_bytes;
  const std::int64_t in = rel % v.page_stride_bytes;
  const RecordLayout& l = v.layout();
  auto set_dim = [&](std::int64_t byte_in_data) {
    if (byte_in_data < l.fp8_dims) {
      loc.field = Field::kFp8Code;
      loc.dim = static_cast<int>(byte_in_data);
      if (l.quant_block_dims) loc.scale_block = loc.dim / l.quant_block_dims;
    } else {
      loc.field = Field::kValue16;
      loc.dim = l.fp8_dims + static_cast<int>((byte_in_data - l.fp8_dims) / 2);
      loc.byte_in_value = static_cast<int>((byte_in_data - l.fp8_dims) % 2);
    }
  };
  if (l.paged_regions) {
    const std::int64_t data_region = v.block_size * l.data_bytes;
    if (in < data_region) {
      loc.index_in_page = in / l.data_bytes;
      set_dim(in % l.data_bytes);
    } else if (in < data_region + v.block_size * l.scale_bytes) {
      const std::int64_t s = in - data_region;
      loc.index_in_page = s / l.scale_bytes;
      const int k = static_cast<int>(s % l.scale_bytes);
      if (k >= l.scale_blocks) {
        loc.field = Field::kScalePad;
      } else {
        loc.field = Field::kScale;
        loc.scale_block = k;
      }
    } else {
      loc.field = Field::kPagePadding;
      return loc;
    }
  } else {
    const std::int64_t t = v.token_stride_bytes > 0 ? in / v.token_stride_bytes : 0;
    const std::int64_t b = v.token_stride_bytes > 0 ? in % v.token_stride_bytes : in;
    if (t >= v.block_size) {
      loc.field = Field::kPagePadding;
      return loc;
    }
    loc.index_in_page = t;
    if (b >= l.data_bytes)
      loc.field = Field::kRowGap;
    else
      set_dim(b);
  }
  loc.slot = loc.page * v.block_size + loc.index_in_page;
  return loc;
}

DecodedRecord decode_record(const std::vector<std::uint8_t>& backing, const PagedCacheView& v, std::int64_t slot,
                            float fp8_scale) {
  DecodedRecord r;
  r.format = v.format;
  const RecordLayout& l = v.layout();
  const std::int64_t data = token_data_offset(v, slot);
  for (int d = 0; d < l.fp8_dims; ++d) r.codes[d] = load8(backing, data + d);
  for (int d = l.fp8_dims; d < kHeadDim; ++d) r.values16[d] = load16(backing, data + dim_offset_in_data(v.format, d));
  if (l.paged_regions) {
    const std::int64_t scales = token_scale_offset(v, slot);
    for (int k = 0; k < l.scale_blocks; ++k) r.scales[k] = load8(backing, scales + k);
    if (l.scale_bytes > l.scale_blocks) r.pad = load8(backing, scales + l.scale_blocks);
  }
  for (int d = 0; d < kHeadDim; ++d) {
    if (d >= l.fp8_dims) {
      r.dequantized[d] = widen16(r.values16[d], v.value_dtype);
    } else if (l.quant_block_dims) {
      r.dequantized[d] = e4m3_decode(r.codes[d]) * ue8m0_decode(r.scales[d / l.quant_block_dims]);
    } else {
      r.dequantized[d] = e4m3_decode(r.codes[d]) * fp8_scale;
    }
  }
  return r;
}

std::string describe_field(const std::vector<std::uint8_t>& backing, const PagedCacheView& v, const ByteLocation& loc,
                           float fp8_scale) {
  const RecordLayout& l = v.layout();
  switch (loc.field) {
    case Field::kFp8Code: {
      const std::uint8_t code = load8(backing, token_data_offset(v, loc.slot) + loc.dim);
      const float value = e4m3_decode(code);
      std::string s = "fp8 " + hex(code, 2) + " = " + num(value);
      if (l.quant_block_dims) {
        const std::uint8_t sb = load8(backing, token_scale_offset(v, loc.slot) + loc.scale_block);
        s += " x scale " + hex(sb, 2) + " = " + num(static_cast<double>(value) * ue8m0_decode(sb));
      } else {
        s += " x " + num(fp8_scale) + " = " + num(static_cast<double>(value) * fp8_scale);
      }
      return s;
    }
    case Field::kValue16: {
      const std::uint16_t bits =
          load16(backing, token_data_offset(v, loc.slot) + dim_offset_in_data(v.format, loc.dim));
      return std::string(v.value_dtype == DType::kF16 ? "f16 " : "bf16 ") + hex(bits, 4) + " = " +
             num(widen16(bits, v.value_dtype));
    }
    case Field::kScale: {
      const std::uint8_t sb = load8(backing, token_scale_offset(v, loc.slot) + loc.scale_block);
      return "scale " + hex(sb, 2) + (sb == kUe8m0Nan ? " = NaN" : " = 2^" + std::to_string(int(sb) - kUe8m0Bias));
    }
    case Field::kScalePad:
      return "pad " + hex(load8(backing, token_scale_offset(v, loc.slot) + l.scale_blocks), 2) + " (contract: 0x00)";
    default: return "byte";
  }
}

}  // namespace kvc::oracle
