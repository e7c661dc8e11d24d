// store_cases.cpp: see store_cases.h.
#include "testkit/cases/store_cases.h"

#include <algorithm>
#include <cmath>

#include "kvc/oracle/bf16.h"
#include "testkit/cases/breaker_table.h"
#include "testkit/cases/case_builder.h"

namespace kvc::testkit {
namespace {

constexpr std::uint16_t kBf16PosInf = 0x7F80, kBf16NegInf = 0xFF80, kBf16NegZero = 0x8000;
constexpr std::uint16_t kBf16NanWithPayload = 0xFFC1;  // a negative quiet NaN with a payload bit

void fill(std::vector<std::uint16_t>& v, std::int64_t row, int dim, std::initializer_list<float> values) {
  for (float x : values) v[static_cast<std::size_t>(row * kHeadDim + dim++)] = oracle::float_to_bf16(x);
}

// +Inf or -Inf with finite elements of both signs and both zeros.
void inf_block(std::vector<std::uint16_t>& v, std::int64_t row, int first_dim, std::uint16_t inf) {
  fill(v, row, first_dim + 1, {2.0f, -2.0f, 0.0f});
  v[static_cast<std::size_t>(row * kHeadDim + first_dim)] = inf;
  v[static_cast<std::size_t>(row * kHeadDim + first_dim + 4)] = kBf16NegZero;
}

}  // namespace

const char* store_pages_name(StorePages p) { return p == StorePages::kPagedView ? "PagedView" : "SglangFlat"; }

std::int64_t store_page_stride_bytes(const StoreShape& shape) {
  return shape.pages == StorePages::kSglangFlat
             ? sglang_page_stride_bytes(shape.format, shape.block_size)
             : layout_of(shape.format).dense_page_bytes(shape.block_size) + kStorePagePaddingBytes;
}

StoreCase make_store_case(const StoreShape& shape, const std::vector<std::uint16_t>& rows,
                          const std::vector<std::int64_t>& indices) {
  const std::int64_t n = static_cast<std::int64_t>(indices.size());
  StoreCase c;
  c.rows = make_tensor_from(DType::kBF16, rows, {n, kHeadDim});
  if (shape.index_dtype == DType::kI32) {
    std::vector<std::int32_t> narrow(indices.begin(), indices.end());
    c.indices = make_tensor_from(DType::kI32, narrow, {n});
  } else {
    c.indices = make_tensor_from(DType::kI64, indices, {n});
  }
  const std::int64_t stride = store_page_stride_bytes(shape);
  const RecordLayout& l = layout_of(shape.format);
  c.cache.dtype = DType::kU8;
  if (shape.pages == StorePages::kSglangFlat) {
    c.cache.sizes = {shape.num_blocks, stride};
    c.cache.strides = {stride, 1};
  } else {
    c.cache.sizes = {shape.num_blocks, shape.block_size, l.record_width};
    c.cache.strides = {stride, l.record_width, 1};
  }
  c.cache.offset_bytes = shape.base_offset_bytes;
  c.block_size = shape.block_size;
  c.kv_mxfp8 = shape.format == RecordFormat::kPacked528;
  return c;
}

std::vector<std::uint16_t> policy_edge_rows(std::int64_t rows, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::uint16_t> v = random_bf16_rows(rng, rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    switch (r % 5) {
      case 0:
        v[static_cast<std::size_t>(r * kHeadDim + 7)] = kBf16NanWithPayload;
        v[static_cast<std::size_t>(r * kHeadDim + 450)] = kBf16NanWithPayload;
        break;
      case 1: inf_block(v, r, 64, kBf16PosInf); break;
      case 2: inf_block(v, r, 128, kBf16NegInf); break;
      case 3:
        for (int d = 192; d < 256; ++d) {
          auto& x = v[static_cast<std::size_t>(r * kHeadDim + d)];
          x = oracle::float_to_bf16(std::ldexp(oracle::bf16_to_float(x), -8));
        }
        break;
      default:
        for (int d = 256; d < 320; ++d) v[static_cast<std::size_t>(r * kHeadDim + d)] = 0;
        break;
    }
  }
  return v;
}

std::vector<std::uint8_t> make_store_backing(const StoreCase& c, std::uint8_t canary) {
  const CacheGeometry g = store_cache_geometry(c);
  std::int64_t end = std::max(c.cache.span_bytes(), g.backing_bytes());
  if (g.num_blocks > 0)
    end = std::max(end, g.offset_bytes + (g.num_blocks - 1) * g.page_stride_bytes() +
                            layout_of(store_format(c)).dense_page_bytes(g.block_size));
  return std::vector<std::uint8_t>(static_cast<std::size_t>(end + kGuardBytes), canary);
}

StoreCase small_valid_store_case(RecordFormat format, StorePages pages, std::uint64_t seed, DType index_dtype,
                                 std::int64_t base_offset_bytes) {
  constexpr std::int64_t kRows = 6, kBlockSize = 16, kBlocks = 2;
  Rng rng(seed);
  std::vector<std::int64_t> indices = rng.distinct(kBlocks * kBlockSize, kRows);
  indices[2] = -1;
  StoreShape shape{format, pages, kBlocks, kBlockSize, base_offset_bytes, index_dtype};
  return make_store_case(shape, policy_edge_rows(kRows, seed), indices);
}

namespace {

constexpr ValidationLevel kContract = ValidationLevel::kContract, kStrict = ValidationLevel::kStrict;
bool any(StorePages) { return true; }
bool view(StorePages p) { return p == StorePages::kPagedView; }
bool flat(StorePages p) { return p == StorePages::kSglangFlat; }
// Index i's value, whatever the index dtype.
void set_index(StoreCase& c, std::int64_t i, std::int64_t v) {
  if (c.indices.meta.dtype == DType::kI32)
    c.indices.store<std::int32_t>(i, static_cast<std::int32_t>(v));
  else
    c.indices.store<std::int64_t>(i, v);
}

// Hostile metadata: malformed rows, indices or cache metadata, rows shorter than they claim.
std::vector<StoreRuleBreaker> malformed_metadata_breakers() {
  return {
      {"RowsMetadataMalformed", ErrorCode::kTensorMetaInvalid, kContract, any,
       [](StoreCase& c, auto&) { c.rows.meta.strides.push_back(1); }},
      {"IndicesNegativeSize", ErrorCode::kTensorMetaInvalid, kContract, any,
       [](StoreCase& c, auto&) { c.indices.meta.sizes[0] = -1; }},
      {"CacheNegativeOffset", ErrorCode::kTensorMetaInvalid, kContract, any,
       [](StoreCase& c, auto&) { c.cache.offset_bytes = -16; }},
      {"RowsBytesShort", ErrorCode::kInputTooSmall, kContract, any,
       [](StoreCase& c, auto&) { c.rows.bytes.pop_back(); }},
  };
}

// The rows: presence, dtype, [N, 512], contiguity.
std::vector<StoreRuleBreaker> rows_breakers() {
  return {
      {"RowsMissing", ErrorCode::kKvShape, kContract, any, [](StoreCase& c, auto&) { c.rows.present = false; }},
      {"RowsFloat16", ErrorCode::kKvDtype, kContract, any,
       [](StoreCase& c, auto&) { c.rows.meta.dtype = DType::kF16; }},
      {"RowsOf256", ErrorCode::kKvShape, kContract, any,
       [](StoreCase& c, auto&) {
         c.rows.meta.sizes = {2 * c.num_rows(), kHeadDim / 2};
         c.rows.meta.strides = {kHeadDim / 2, 1};
       }},
      {"RowsNotContiguous", ErrorCode::kKvNotContiguous, kContract, any,
       [](StoreCase& c, auto&) {
         c.rows.meta.sizes = {c.num_rows() / 2, kHeadDim};
         c.rows.meta.strides = {2 * kHeadDim, 1};
       }},
  };
}

// The indices: presence, dtype, rank, contiguity, one per row.
std::vector<StoreRuleBreaker> indices_breakers() {
  return {
      {"IndicesMissing", ErrorCode::kStoreIndicesInvalid, kContract, any,
       [](StoreCase& c, auto&) { c.indices.present = false; }},
      {"IndicesFloat32", ErrorCode::kStoreIndicesInvalid, kContract, any,
       [](StoreCase& c, auto&) { c.indices.meta.dtype = DType::kF32; }},
      {"Indices2D", ErrorCode::kStoreIndicesInvalid, kContract, any,
       [](StoreCase& c, auto&) {
         c.indices.meta.sizes = {c.num_rows(), 1};
         c.indices.meta.strides = {1, 1};
       }},
      {"IndicesNotContiguous", ErrorCode::kStoreIndicesInvalid, kContract, any,
       [](StoreCase& c, auto&) {
         c.indices.meta.sizes = {c.num_rows() / 2};
         c.indices.meta.strides = {2};
       }},
      {"OneIndexFewer", ErrorCode::kStoreIndicesRowMismatch, kContract, any,
       [](StoreCase& c, auto&) { c.indices.meta.sizes[0] -= 1; }},
  };
}

// Indices and cache on another device than the rows.
std::vector<StoreRuleBreaker> device_breakers() {
  return {
      {"IndicesOnAnotherDevice", ErrorCode::kDeviceMismatch, kContract, any,
       [](StoreCase& c, auto&) { c.indices.meta.device = 1; }},
      {"CacheOnAnotherDevice", ErrorCode::kDeviceMismatch, kContract, any,
       [](StoreCase& c, auto&) { c.cache.device = 1; }},
  };
}

// The cache: packed, its rank, block size, width, strides and page size.
std::vector<StoreRuleBreaker> cache_breakers() {
  return {
      {"CacheBf16", ErrorCode::kStoreCacheNotPacked, kContract, any,
       [](StoreCase& c, auto&) { c.cache.dtype = DType::kBF16; }},
      {"CacheRank4", ErrorCode::kStoreCacheRank, kContract, any,
       [](StoreCase& c, auto&) {
         while (c.cache.rank() < 4) {
           c.cache.sizes.push_back(1);
           c.cache.strides.push_back(1);
         }
       }},
      {"BlockSizeZero", ErrorCode::kBlockSizeNonPositive, kContract, any,
       [](StoreCase& c, auto&) { c.block_size = 0; }},
      {"BlockSizeNotSize1", ErrorCode::kBlockSizeMismatch, kContract, view,
       [](StoreCase& c, auto&) { c.block_size /= 2; }},
      {"WidthOfTheOtherFormat", ErrorCode::kCacheWidth, kContract, view,
       [](StoreCase& c, auto&) { c.kv_mxfp8 = !c.kv_mxfp8; }},
      {"Stride2NotOne", ErrorCode::kCacheStride2, kContract, view, [](StoreCase& c, auto&) { c.cache.strides[2] = 2; }},
      {"FlatStride1NotOne", ErrorCode::kCacheStride2, kContract, flat,
       [](StoreCase& c, auto&) { c.cache.strides[1] = 2; }},
      {"FlatPageBelowRecords", ErrorCode::kStorePageBytesTooSmall, kContract, flat,
       [](StoreCase& c, auto&) {
         c.cache.sizes[1] = layout_of(store_format(c)).dense_page_bytes(c.block_size) - kAlignment;
       }},
      {"FlatBlockSizePastInt64", ErrorCode::kCacheGeometryInvalid, kContract, flat,
       [](StoreCase& c, auto&) { c.block_size = std::int64_t{1} << 60; }},
      {"PageStride2Pow31", ErrorCode::kPageStrideTooLarge, kContract, any,
       [](StoreCase& c, auto&) {
         c.cache.sizes[0] = 1;
         c.cache.strides[0] = std::int64_t{1} << 31;
       }},
  };
}

// Index values, and the strict level: strides below the dense page, misaligned bases, duplicate indices.
std::vector<StoreRuleBreaker> index_value_and_strict_breakers() {
  return {
      {"IndexAtCapacity", ErrorCode::kSlotOutOfRange, kContract, any,
       [](StoreCase& c, auto&) { set_index(c, 0, store_cache_geometry(c).num_blocks * c.block_size); }},
      {"PageStrideBelowDense", ErrorCode::kPageStrideBelowDense, kStrict, any,
       [](StoreCase& c, std::vector<std::uint8_t>& backing) {
         c.cache.strides[0] = layout_of(store_format(c)).dense_page_bytes(c.block_size) - kAlignment;
         if (c.cache.rank() == 2) c.cache.sizes[1] = c.cache.strides[0] + kAlignment;  // pages overlap
         backing = make_store_backing(c);
       }},
      {"MisalignedRows", ErrorCode::kMisaligned, kStrict, any,
       [](StoreCase& c, auto&) {
         c.rows.meta.offset_bytes = 2;
         c.rows.bytes.insert(c.rows.bytes.begin(), 2, 0);
       }},
      {"MisalignedCacheBase", ErrorCode::kMisaligned, kStrict, any,
       [](StoreCase& c, std::vector<std::uint8_t>& backing) {
         c.cache.offset_bytes += 8;
         backing = make_store_backing(c);
       }},
      {"MisalignedPageStride", ErrorCode::kMisaligned, kStrict, any,
       [](StoreCase& c, std::vector<std::uint8_t>& backing) {
         c.cache.strides[0] += 8;
         if (c.cache.rank() == 2) c.cache.sizes[1] += 8;
         backing = make_store_backing(c);
       }},
      {"DuplicateIndex", ErrorCode::kDuplicateSlot, kStrict, any,
       [](StoreCase& c, auto&) { set_index(c, 1, c.index(0)); }},
  };
}

// Harness rules: a backing or index bytes that do not cover the case.
std::vector<StoreRuleBreaker> harness_breakers() {
  return {
      {"BackingShort", ErrorCode::kBackingTooSmall, kContract, any,
       [](StoreCase& c, std::vector<std::uint8_t>& backing) {
         backing.resize(static_cast<std::size_t>(store_cache_geometry(c).backing_bytes() - 1));
       }},
      {"IndicesBytesShort", ErrorCode::kInputTooSmall, kContract, any,
       [](StoreCase& c, auto&) { c.indices.bytes.pop_back(); }},
  };
}

}  // namespace

const std::vector<StoreRuleBreaker>& store_rule_breakers() {
  // The families in table order: the store invalid-input tests are named and ordered by it.
  static const std::vector<StoreRuleBreaker> table =
      breaker_table<StoreRuleBreaker>({malformed_metadata_breakers, rows_breakers, indices_breakers, device_breakers,
                                       cache_breakers, index_value_and_strict_breakers, harness_breakers});
  return table;
}

std::vector<StoreRuleCell> store_rule_matrix() {
  std::vector<StoreRuleCell> cells;
  for (const StoreRuleBreaker& b : store_rule_breakers())
    for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528})
      for (StorePages p : kAllStorePages)
        if (b.applies(p)) cells.push_back({&b, f, p});
  return cells;
}

std::string store_rule_cell_name(const StoreRuleCell& cell) {
  return cell.breaker->name + "_" + std::string(layout_of(cell.format).name) + "_" + store_pages_name(cell.pages);
}

}  // namespace kvc::testkit
