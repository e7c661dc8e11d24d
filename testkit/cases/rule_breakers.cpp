// rule_breakers.cpp: the table of rule breakers (see rule_breakers.h).
#include "testkit/cases/rule_breakers.h"

#include <algorithm>
#include <cmath>

#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/breaker_table.h"
#include "testkit/cases/test_name.h"

namespace kvc::testkit {
namespace {

constexpr auto kContract = ValidationLevel::kContract;
constexpr auto kStrict = ValidationLevel::kStrict;

bool any(InsertOp, RecordFormat) { return true; }
bool legacy(InsertOp op, RecordFormat) { return op == InsertOp::kLegacy; }
bool packed_legacy(InsertOp op, RecordFormat f) { return op == InsertOp::kLegacy && is_packed(f); }
bool fp8_cache(InsertOp, RecordFormat f) { return f == RecordFormat::kFp8_512; }
bool fp8_legacy(InsertOp op, RecordFormat f) { return op == InsertOp::kLegacy && f == RecordFormat::kFp8_512; }
bool kv_only(InsertOp op, RecordFormat) { return op == InsertOp::kKvOnly; }
bool uint8_cache(InsertOp, RecordFormat f) { return is_packed(f); }

void retype(HostTensor& t, DType d) {
  t.meta.dtype = d;
  t.bytes.resize(static_cast<std::size_t>(t.meta.span_bytes()), 0);
}
void reshape(TensorMeta& m, std::vector<std::int64_t> sizes) {
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
}
void reshape(HostTensor& t, std::vector<std::int64_t> sizes) {
  reshape(t.meta, std::move(sizes));
  t.bytes.resize(static_cast<std::size_t>(t.meta.span_bytes()), 0);
}
// The first row with a live slot; else row 0 when there are slots at all; else -1.
std::int64_t first_live_row(const InsertCase& c) {
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (c.slots.load<std::int64_t>(t) >= 0) return t;
  return c.num_inserted() > 0 ? 0 : -1;
}

// The first row whose position the op reads, or -1.
std::int64_t first_read_position(const InsertCase& c) {
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    if (position_is_read(c, t)) return t;
  return -1;
}

bool make_non_contiguous(HostTensor& t) {
  if (t.meta.size(0) == 1) return false;  // a single row is contiguous whatever its stride
  t.meta.strides[0] *= 2;
  t.bytes.resize(static_cast<std::size_t>(t.meta.span_bytes()), 0);
  return true;
}

using C = InsertCase;
using O = InsertOutputs;

// The kv tensor: dtype, row width, contiguity, presence.
std::vector<RuleBreaker> kv_tensor_breakers() {
  return {
      {"KvFloat32", ErrorCode::kKvDtype, kContract, any,
       [](C& c, O&) {
         retype(c.kv, DType::kF32);
         return true;
       }},
      {"KvOnlyWithFloat16", ErrorCode::kKvDtype, kContract, kv_only,
       [](C& c, O&) {
         c.kv.meta.dtype = DType::kF16;
         return true;
       }},
      {"KvRowsOf256", ErrorCode::kKvShape, kContract, any,
       [](C& c, O&) {
         reshape(c.kv, {c.num_rows(), 256});
         return true;
       }},
      {"KvNotContiguous", ErrorCode::kKvNotContiguous, kContract, any,
       [](C& c, O&) { return make_non_contiguous(c.kv); }},
      {"KvMissing", ErrorCode::kKvShape, kContract, any,
       [](C& c, O&) {
         c.kv = HostTensor{};
         return true;
       }},
  };
}

// Tensors on another device than kv.
std::vector<RuleBreaker> device_breakers() {
  return {
      {"SlotsOnAnotherDevice", ErrorCode::kDeviceMismatch, kContract, any,
       [](C& c, O&) {
         c.slots.meta.device = 1;
         return true;
       }},
      {"CacheOnAnotherDevice", ErrorCode::kDeviceMismatch, kContract, any,
       [](C& c, O&) {
         c.cache.device = 1;
         return true;
       }},
      {"QOutOnAnotherDevice", ErrorCode::kDeviceMismatch, kContract, legacy,
       [](C& c, O&) {
         c.q_out.device = 1;
         return true;
       }},
  };
}

// The cache view: rank, block size, stride(2), dtype, width.
std::vector<RuleBreaker> cache_view_breakers() {
  return {
      {"CacheRank2", ErrorCode::kCacheRank, kContract, any,
       [](C& c, O&) {
         c.cache.rank = 2;
         return true;
       }},
      {"BlockSizeZero", ErrorCode::kBlockSizeNonPositive, kContract, any,
       [](C& c, O&) {
         c.block_size = 0;
         return true;
       }},
      {"BlockSizeMismatch", ErrorCode::kBlockSizeMismatch, kContract, any,
       [](C& c, O&) {
         c.block_size = c.cache.block_size * 2;
         return true;
       }},
      {"CacheStride2NotOne", ErrorCode::kCacheStride2, kContract, any,
       [](C& c, O&) {
         c.cache.stride2 = 2;
         return true;
       }},
      {"CacheDtypeFloat32", ErrorCode::kCacheDtype, kContract, any,
       [](C& c, O&) {
         c.cache.dtype = DType::kF32;
         return true;
       }},
      {"Width584WithKvMxfp8", ErrorCode::kCacheWidth, kContract,
       [](InsertOp, RecordFormat f) { return f == RecordFormat::kPacked584; },
       [](C& c, O&) {
         c.kv_mxfp8 = true;
         return true;
       }},
      {"Width528WithoutKvMxfp8", ErrorCode::kCacheWidth, kContract,
       [](InsertOp, RecordFormat f) { return f == RecordFormat::kPacked528; },
       [](C& c, O&) {
         c.kv_mxfp8 = false;
         return true;
       }},
      {"FullCacheWidth584", ErrorCode::kCacheWidth, kContract, [](InsertOp, RecordFormat f) { return !is_packed(f); },
       [](C& c, O&) {
         c.cache.width = 584;
         return true;
       }},
  };
}

// The slot and position tensors and the cos/sin table: dtype, rank, length.
std::vector<RuleBreaker> index_tensor_breakers() {
  return {
      {"SlotsInt32", ErrorCode::kSlotsInvalid, kContract, any,
       [](C& c, O&) {
         c.slots.meta.dtype = DType::kI32;
         return true;
       }},
      {"PositionsRank2", ErrorCode::kPositionsInvalid, kContract, any,
       [](C& c, O&) {
         reshape(c.positions, {c.num_rows(), 1});
         return true;
       }},
      {"PositionsLongerThanKv", ErrorCode::kPositionsRowMismatch, kContract, any,
       [](C& c, O&) {
         reshape(c.positions, {c.num_rows() + 1});
         return true;
       }},
      {"SlotsLongerThanKv", ErrorCode::kSlotsExceedRows, kContract, any,
       [](C& c, O&) {
         c.slots =
             make_tensor_from(DType::kI64, std::vector<std::int64_t>(static_cast<std::size_t>(c.num_rows() + 1), -1),
                              {c.num_rows() + 1});
         return true;
       }},
      {"CosSinWidth32", ErrorCode::kCosSinInvalid, kContract, any,
       [](C& c, O&) {
         reshape(c.cos_sin, {c.cos_sin.meta.size(0), 32});
         return true;
       }},
  };
}

// What the cache format asks of the rest: kv dtype, the fp8 scale, the packed page stride.
std::vector<RuleBreaker> cache_format_breakers() {
  return {
      {"Bf16CacheWithFloat16Kv", ErrorCode::kKvDtype, kContract,
       [](InsertOp op, RecordFormat f) { return op == InsertOp::kLegacy && f == RecordFormat::kBf16_512; },
       [](C& c, O&) {
         c.kv.meta.dtype = DType::kF16;  // q follows, so only the bf16-cache rule is broken
         c.q.meta.dtype = DType::kF16;
         return true;
       }},
      {"Fp8CacheWithoutScale", ErrorCode::kFp8ScaleMissing, kContract, fp8_cache,
       [](C& c, O&) {
         c.fp8_scale = HostTensor{};
         return true;
       }},
      {"Fp8ScaleWithTwoElements", ErrorCode::kFp8ScaleShape, kContract, fp8_cache,
       [](C& c, O&) {
         reshape(c.fp8_scale, {2});
         return true;
       }},
      {"PackedPageStrideAtTwoToThe31", ErrorCode::kPageStrideTooLarge, kContract, uint8_cache,
       [](C& c, O&) {
         c.cache.stride0 = std::int64_t{1} << 31;
         return true;
       }},
  };
}

// The legacy op's Q side: q_in, q_out, head padding, the Q scale.
std::vector<RuleBreaker> q_breakers() {
  return {
      // The other 16-bit type than kv's (the fuzzer generates fp16 legacy cases too).
      {"QDtypeOtherThanKv", ErrorCode::kQDtype, kContract, legacy,
       [](C& c, O&) {
         c.q.meta.dtype = c.kv.meta.dtype == DType::kF16 ? DType::kBF16 : DType::kF16;
         return true;
       }},
      {"QHeadsOf256", ErrorCode::kQShape, kContract, legacy,
       [](C& c, O&) {
         reshape(c.q, {c.num_rows(), c.q.meta.size(1), 256});
         return true;
       }},
      {"QNotContiguous", ErrorCode::kQNotContiguous, kContract, legacy,
       [](C& c, O&) { return make_non_contiguous(c.q); }},
      {"QOutDtypeFloat32", ErrorCode::kQOutDtype, kContract, legacy,
       [](C& c, O&) {
         c.q_out.dtype = DType::kF32;
         return true;
       }},
      {"QOutHeadsOf256", ErrorCode::kQOutShape, kContract, legacy,
       [](C& c, O&) {
         reshape(c.q_out, {c.num_rows(), c.padded_heads() > 0 ? c.padded_heads() : 8, 256});
         return true;
       }},
      {"HeadPadding12", ErrorCode::kUnsupportedHeadPadding, kContract, packed_legacy,
       [](C& c, O& out) {
         reshape(c.q_out, {c.num_rows(), 12, kHeadDim});
         out.q_out.resize(static_cast<std::size_t>(c.q_out.span_bytes()), 0xA5);
         return true;
       }},
      {"HeadPaddingBelowHeads", ErrorCode::kHeadPaddingBelowHeads, kContract, packed_legacy,
       [](C& c, O&) {
         reshape(c.q, {c.num_rows(), 16, kHeadDim});
         reshape(c.q_out, {c.num_rows(), 8, kHeadDim});
         return true;
       }},
      {"Fp8LegacyWithoutQScale", ErrorCode::kQScaleShape, kContract, fp8_legacy,
       [](C& c, O&) {
         c.q_scale_inv = HostTensor{};
         return true;
       }},
  };
}

// The fused kv_norm weight.
std::vector<RuleBreaker> kv_norm_breakers() {
  return {
      {"NormWeightOf256", ErrorCode::kNormWeightInvalid, kContract, kv_only,
       [](C& c, O&) {
         c.kv_norm_weight = make_tensor(DType::kBF16, {256});
         return true;
       }},
      {"NormWeightWithLegacy", ErrorCode::kNormWeightInvalid, kContract, legacy,
       [](C& c, O&) {
         c.kv_norm_weight = make_tensor(DType::kBF16, {kHeadDim});
         return true;
       }},
  };
}

// Strict level: strides below the dense page or row, misaligned bases.
std::vector<RuleBreaker> strict_layout_breakers() {
  return {
      {"PageStrideBelowDensePage", ErrorCode::kPageStrideBelowDense, kStrict, any,
       [](C& c, O&) {
         const RecordLayout& l = resolve_or_throw(c).layout;
         const std::int64_t dense = l.paged_regions ? l.dense_page_bytes(c.cache.block_size)
                                                    : c.cache.block_size * c.cache.token_stride_bytes();
         c.cache.stride0 = (dense - kAlignment) / c.cache.element_bytes();
         return true;
       }},
      {"TokenStrideBelowRow", ErrorCode::kPageStrideBelowDense, kStrict,
       [](InsertOp, RecordFormat f) { return !is_packed(f); },
       [](C& c, O&) {
         // Rows overlap; the page stride still covers block_size rows of the old stride.
         c.cache.stride1 = (resolve_or_throw(c).layout.data_bytes - kAlignment) / c.cache.element_bytes();
         return true;
       }},
      {"MisalignedCacheBase", ErrorCode::kMisaligned, kStrict, any,
       [](C& c, O&) {
         c.cache.offset_bytes += 8;
         return true;
       }},
      {"MisalignedKvBase", ErrorCode::kMisaligned, kStrict, any,
       [](C& c, O&) {
         c.kv.meta.offset_bytes = 2;
         c.kv.bytes.insert(c.kv.bytes.begin(), 2, 0);
         return true;
       }},
      // The other sites of rule 202, each with the smallest offset its element allows: a view
      // torch can make (a slice one element in), which a kernel's 16-byte loads cannot take.
      {"MisalignedCosSinBase", ErrorCode::kMisaligned, kStrict, any,
       [](C& c, O&) {
         c.cos_sin.meta.offset_bytes = 4;
         c.cos_sin.bytes.insert(c.cos_sin.bytes.begin(), 4, 0);
         return true;
       }},
      {"MisalignedPageStride", ErrorCode::kMisaligned, kStrict, any,
       [](C& c, O& out) {
         // 8 bytes more per page: above the dense page (201 holds), not a multiple of 16.
         c.cache.stride0 += 8 / c.cache.element_bytes();
         out.cache.resize(std::max(out.cache.size(), static_cast<std::size_t>(c.cache.backing_bytes() + kGuardBytes)),
                          kCanary);
         return true;
       }},
      {"MisalignedTokenStride", ErrorCode::kMisaligned, kStrict, [](InsertOp, RecordFormat f) { return !is_packed(f); },
       [](C& c, O& out) {
         // 8 bytes more per row; the page keeps its padding and is rounded up to 16 bytes (an odd
         // block size adds 8), so the token stride is the only site broken.
         const std::int64_t page_padding = c.cache.page_stride_bytes() - c.block_size * c.cache.token_stride_bytes();
         c.cache.stride1 += 8 / c.cache.element_bytes();
         const std::int64_t page = c.block_size * c.cache.token_stride_bytes() + page_padding;
         c.cache.stride0 = (page + kAlignment - 1) / kAlignment * kAlignment / c.cache.element_bytes();
         out.cache.resize(std::max(out.cache.size(), static_cast<std::size_t>(c.cache.backing_bytes() + kGuardBytes)),
                          kCanary);
         return true;
       }},
      {"MisalignedQBase", ErrorCode::kMisaligned, kStrict, legacy,
       [](C& c, O&) {
         c.q.meta.offset_bytes = 2;
         c.q.bytes.insert(c.q.bytes.begin(), 2, 0);
         return true;
       }},
      {"MisalignedQOutBase", ErrorCode::kMisaligned, kStrict, legacy,
       [](C& c, O& out) {
         c.q_out.offset_bytes = 2;
         out.q_out.insert(out.q_out.begin(), 2, kCanary);
         return true;
       }},
  };
}

// Slot and position values: out of range, duplicated.
std::vector<RuleBreaker> slot_and_position_value_breakers() {
  return {
      {"SlotBeyondTheCache", ErrorCode::kSlotOutOfRange, kContract, any,
       [](C& c, O&) {
         const std::int64_t row = first_live_row(c);
         if (row < 0) return false;
         c.slots.store<std::int64_t>(row, c.cache.num_blocks * c.block_size);
         return true;
       }},
      {"DuplicateSlot", ErrorCode::kDuplicateSlot, kStrict, any,
       [](C& c, O&) {
         std::int64_t first = -1;
         for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
           const std::int64_t s = c.slots.load<std::int64_t>(t);
           if (s < 0) continue;
           if (first < 0) {
             first = s;
           } else {
             c.slots.store<std::int64_t>(t, first);
             return true;
           }
         }
         return false;
       }},
      {"PositionAtMaxPos", ErrorCode::kPositionOutOfRange, kContract, any,
       [](C& c, O&) {
         const std::int64_t row = first_read_position(c);
         if (row < 0) return false;
         c.positions.store<std::int64_t>(row, c.cos_sin.meta.size(0));
         return true;
       }},
      {"NegativePosition", ErrorCode::kPositionOutOfRange, kContract, any,
       [](C& c, O&) {
         const std::int64_t row = first_read_position(c);
         if (row < 0) return false;
         c.positions.store<std::int64_t>(row, -1);
         return true;
       }},
  };
}

// Strict level: scale values that are zero, NaN or infinite.
std::vector<RuleBreaker> scale_value_breakers() {
  return {
      {"Fp8ScaleZero", ErrorCode::kFp8ScaleValue, kStrict, fp8_cache,
       [](C& c, O&) {
         c.fp8_scale.store<float>(0, 0.0f);
         return true;
       }},
      {"Fp8ScaleNaN", ErrorCode::kFp8ScaleValue, kStrict, fp8_cache,
       [](C& c, O&) {
         c.fp8_scale.store<float>(0, NAN);
         return true;
       }},
      {"QScaleInverseInfinite", ErrorCode::kQScaleValue, kStrict, fp8_legacy,
       [](C& c, O&) {
         c.q_scale_inv.store<float>(0, INFINITY);
         return true;
       }},
  };
}

// Hostile metadata: an unknown op, malformed tensor metadata, a negative stride.
std::vector<RuleBreaker> hostile_metadata_breakers() {
  return {
      {"UnknownOpCode", ErrorCode::kWrongOp, kContract, any,
       [](C& c, O&) {
         c.op = static_cast<InsertOp>(7);
         return true;
       }},
      {"KvStridesLongerThanSizes", ErrorCode::kTensorMetaInvalid, kContract, any,
       [](C& c, O&) {
         c.kv.meta.strides.push_back(1);
         return true;
       }},
      {"QOutNegativeOffset", ErrorCode::kTensorMetaInvalid, kContract, legacy,
       [](C& c, O&) {
         c.q_out.offset_bytes = -kAlignment;
         return true;
       }},
      {"NegativePageStride", ErrorCode::kCacheGeometryInvalid, kContract, any,
       [](C& c, O&) {
         c.cache.stride0 = -std::max<std::int64_t>(c.cache.stride0, 1);
         return true;
       }},
  };
}

// Harness rules: outputs and inputs that do not cover the case.
std::vector<RuleBreaker> harness_breakers() {
  return {
      {"BackingTooSmall", ErrorCode::kBackingTooSmall, kContract, any,
       [](C&, O& out) {
         out.cache.resize(out.cache.size() / 2);
         return true;
       }},
      {"QOutputTooSmall", ErrorCode::kOutputTooSmall, kContract, legacy,
       [](C&, O& out) {
         if (out.q_out.empty()) return false;
         out.q_out.resize(out.q_out.size() - 1);
         return true;
       }},
      {"KvBytesTruncated", ErrorCode::kInputTooSmall, kContract, any,
       [](C& c, O&) {
         if (c.kv.bytes.empty())
           c.kv.meta.sizes[0] = 1;  // claims a row it has no bytes for
         else
           c.kv.bytes.pop_back();
         return true;
       }},
  };
}

}  // namespace

const std::vector<RuleBreaker>& rule_breakers() {
  // The families in table order: the invalid-input matrix names and orders its cells by it.
  static const std::vector<RuleBreaker> table = breaker_table<RuleBreaker>(
      {kv_tensor_breakers, device_breakers, cache_view_breakers, index_tensor_breakers, cache_format_breakers,
       q_breakers, kv_norm_breakers, strict_layout_breakers, slot_and_position_value_breakers, scale_value_breakers,
       hostile_metadata_breakers, harness_breakers});
  return table;
}

std::vector<RuleMatrixEntry> rule_matrix() {
  std::vector<RuleMatrixEntry> m;
  for (const RuleBreaker& b : rule_breakers())
    for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
      for (RecordFormat f : kAllFormats)
        if (b.applies(op, f)) m.push_back({&b, op, f});
  return m;
}

std::string rule_matrix_name(const RuleMatrixEntry& e) {
  return e.breaker->name + (e.op == InsertOp::kLegacy ? "_Legacy_" : "_KvOnly_") + format_test_name(e.format);
}

void PrintTo(const RuleMatrixEntry& e, std::ostream* os) { *os << rule_matrix_name(e); }

}  // namespace kvc::testkit
