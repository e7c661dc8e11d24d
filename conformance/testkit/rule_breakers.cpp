// rule_breakers.cpp: the table of rule breakers (see rule_breakers.h).
#include "kvc/testkit/rule_breakers.h"

#include <cmath>

namespace kvc::testkit {
namespace {

using oracle::ValidationLevel;
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
std::int64_t first_live_row(const InsertCase& c) {
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (c.slots.load<std::int64_t>(t) >= 0) return t;
  return 0;
}

}  // namespace

const std::vector<RuleBreaker>& rule_breakers() {
  static const std::vector<RuleBreaker> table = {
      {"KvFloat32", ErrorCode::kKvDtype, kContract, any, [](InsertCase& c, InsertOutputs&) { retype(c.kv, DType::kF32); }},
      {"KvOnlyWithFloat16", ErrorCode::kKvDtype, kContract, kv_only, [](InsertCase& c, InsertOutputs&) { c.kv.meta.dtype = DType::kF16; }},
      {"KvRowsOf256", ErrorCode::kKvShape, kContract, any,
       [](InsertCase& c, InsertOutputs&) { reshape(c.kv, {c.num_rows(), 256}); }},
      {"KvNotContiguous", ErrorCode::kKvNotContiguous, kContract, any,
       [](InsertCase& c, InsertOutputs&) {
         c.kv.meta.strides = {2 * kHeadDim, 1};
         c.kv.bytes.resize(static_cast<std::size_t>(c.kv.meta.span_bytes()), 0);
       }},
      {"SlotsOnAnotherDevice", ErrorCode::kDeviceMismatch, kContract, any, [](InsertCase& c, InsertOutputs&) { c.slots.meta.device = 1; }},
      {"CacheRank2", ErrorCode::kCacheRank, kContract, any, [](InsertCase& c, InsertOutputs&) { c.cache.rank = 2; }},
      {"BlockSizeZero", ErrorCode::kBlockSizeNonPositive, kContract, any, [](InsertCase& c, InsertOutputs&) { c.block_size = 0; }},
      {"BlockSizeMismatch", ErrorCode::kBlockSizeMismatch, kContract, any,
       [](InsertCase& c, InsertOutputs&) { c.block_size = c.cache.block_size * 2; }},
      {"CacheStride2NotOne", ErrorCode::kCacheStride2, kContract, any, [](InsertCase& c, InsertOutputs&) { c.cache.stride2 = 2; }},
      {"CacheDtypeFloat32", ErrorCode::kCacheDtype, kContract, any, [](InsertCase& c, InsertOutputs&) { c.cache.dtype = DType::kF32; }},
      {"Width584WithKvMxfp8", ErrorCode::kCacheWidth, kContract,
       [](InsertOp, RecordFormat f) { return f == RecordFormat::kPacked584; },
       [](InsertCase& c, InsertOutputs&) { c.kv_mxfp8 = true; }},
      {"Width528WithoutKvMxfp8", ErrorCode::kCacheWidth, kContract,
       [](InsertOp, RecordFormat f) { return f == RecordFormat::kPacked528; },
       [](InsertCase& c, InsertOutputs&) { c.kv_mxfp8 = false; }},
      {"FullCacheWidth584", ErrorCode::kCacheWidth, kContract, [](InsertOp, RecordFormat f) { return !is_packed(f); },
       [](InsertCase& c, InsertOutputs&) { c.cache.width = 584; }},
      {"SlotsInt32", ErrorCode::kSlotsInvalid, kContract, any, [](InsertCase& c, InsertOutputs&) { c.slots.meta.dtype = DType::kI32; }},
      {"PositionsRank2", ErrorCode::kPositionsInvalid, kContract, any,
       [](InsertCase& c, InsertOutputs&) { reshape(c.positions, {c.num_rows(), 1}); }},
      {"PositionsShorterThanKv", ErrorCode::kPositionsRowMismatch, kContract, any,
       [](InsertCase& c, InsertOutputs&) { reshape(c.positions, {c.num_rows() - 1}); }},
      {"SlotsLongerThanKv", ErrorCode::kSlotsExceedRows, kContract, any,
       [](InsertCase& c, InsertOutputs&) {
         std::vector<std::int64_t> s(static_cast<std::size_t>(c.num_rows() + 1), -1);
         c.slots = make_tensor_from(DType::kI64, s, {c.num_rows() + 1});
       }},
      {"CosSinWidth32", ErrorCode::kCosSinInvalid, kContract, any,
       [](InsertCase& c, InsertOutputs&) { reshape(c.cos_sin, {c.cos_sin.meta.size(0), 32}); }},
      {"Fp8CacheWithoutScale", ErrorCode::kFp8ScaleMissing, kContract, fp8_cache, [](InsertCase& c, InsertOutputs&) { c.fp8_scale = HostTensor{}; }},
      {"Fp8ScaleWithTwoElements", ErrorCode::kFp8ScaleShape, kContract, fp8_cache,
       [](InsertCase& c, InsertOutputs&) { reshape(c.fp8_scale, {2}); }},
      {"PackedPageStrideAtTwoToThe31", ErrorCode::kPageStrideTooLarge, kContract, uint8_cache,
       [](InsertCase& c, InsertOutputs&) { c.cache.stride0 = std::int64_t{1} << 31; }},
      {"QFloat16WithBf16Kv", ErrorCode::kQDtype, kContract, legacy, [](InsertCase& c, InsertOutputs&) { c.q.meta.dtype = DType::kF16; }},
      {"QHeadsOf256", ErrorCode::kQShape, kContract, legacy,
       [](InsertCase& c, InsertOutputs&) { reshape(c.q, {c.num_rows(), c.q.meta.size(1), 256}); }},
      {"QNotContiguous", ErrorCode::kQNotContiguous, kContract, legacy,
       [](InsertCase& c, InsertOutputs&) {
         c.q.meta.strides[0] *= 2;
         c.q.bytes.resize(static_cast<std::size_t>(c.q.meta.span_bytes()), 0);
       }},
      {"QOutDtypeFloat32", ErrorCode::kQOutDtype, kContract, legacy, [](InsertCase& c, InsertOutputs&) { c.q_out.dtype = DType::kF32; }},
      {"QOutHeadsOf256", ErrorCode::kQOutShape, kContract, legacy,
       [](InsertCase& c, InsertOutputs&) { reshape(c.q_out, {c.num_rows(), c.q_out.rank() == 3 ? c.q_out.size(1) : 8, 256}); }},
      {"HeadPadding12", ErrorCode::kUnsupportedHeadPadding, kContract, packed_legacy,
       [](InsertCase& c, InsertOutputs& out) {
         reshape(c.q_out, {c.num_rows(), 12, kHeadDim});
         out.q_out.resize(static_cast<std::size_t>(c.q_out.span_bytes()), 0xA5);
       }},
      {"HeadPaddingBelowHeads", ErrorCode::kHeadPaddingBelowHeads, kContract, packed_legacy,
       [](InsertCase& c, InsertOutputs&) {
         reshape(c.q, {c.num_rows(), 16, kHeadDim});
         reshape(c.q_out, {c.num_rows(), 8, kHeadDim});
       }},
      {"Fp8LegacyWithoutQScale", ErrorCode::kQScaleShape, kContract, fp8_legacy, [](InsertCase& c, InsertOutputs&) { c.q_scale_inv = HostTensor{}; }},
      {"NormWeightOf256", ErrorCode::kNormWeightInvalid, kContract, kv_only,
       [](InsertCase& c, InsertOutputs&) { c.kv_norm_weight = make_tensor(DType::kBF16, {256}); }},
      {"PageStrideBelowDensePage", ErrorCode::kPageStrideBelowDense, kStrict, any,
       [](InsertCase& c, InsertOutputs&) {
         const RecordLayout& l = layout_of(*format_of(c));
         const std::int64_t dense = l.paged_regions ? l.dense_page_bytes(c.cache.block_size) : c.cache.block_size * c.cache.token_stride_bytes();
         c.cache.stride0 = (dense - kAlignment) / c.cache.element_bytes();
       }},
      {"MisalignedCacheBase", ErrorCode::kMisaligned, kStrict, any, [](InsertCase& c, InsertOutputs&) { c.cache.offset_bytes += 8; }},
      {"MisalignedKvBase", ErrorCode::kMisaligned, kStrict, any,
       [](InsertCase& c, InsertOutputs&) {
         c.kv.meta.offset_bytes = 2;
         c.kv.bytes.insert(c.kv.bytes.begin(), 2, 0);
       }},
      {"SlotBeyondTheCache", ErrorCode::kSlotOutOfRange, kContract, any,
       [](InsertCase& c, InsertOutputs&) { c.slots.store<std::int64_t>(first_live_row(c), c.cache.num_blocks * c.block_size); }},
      {"DuplicateSlot", ErrorCode::kDuplicateSlot, kStrict, any,
       [](InsertCase& c, InsertOutputs&) {
         std::int64_t first = -1;
         for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
           const std::int64_t s = c.slots.load<std::int64_t>(t);
           if (s < 0) continue;
           if (first < 0) first = s;
           else { c.slots.store<std::int64_t>(t, first); return; }
         }
       }},
      {"PositionAtMaxPos", ErrorCode::kPositionOutOfRange, kContract, any,
       [](InsertCase& c, InsertOutputs&) { c.positions.store<std::int64_t>(first_live_row(c), c.cos_sin.meta.size(0)); }},
      {"NegativePosition", ErrorCode::kPositionOutOfRange, kContract, any,
       [](InsertCase& c, InsertOutputs&) { c.positions.store<std::int64_t>(first_live_row(c), -1); }},
      {"Fp8ScaleZero", ErrorCode::kFp8ScaleValue, kStrict, fp8_cache, [](InsertCase& c, InsertOutputs&) { c.fp8_scale.store<float>(0, 0.0f); }},
      {"Fp8ScaleNaN", ErrorCode::kFp8ScaleValue, kStrict, fp8_cache, [](InsertCase& c, InsertOutputs&) { c.fp8_scale.store<float>(0, NAN); }},
      {"QScaleInverseInfinite", ErrorCode::kQScaleValue, kStrict, fp8_legacy,
       [](InsertCase& c, InsertOutputs&) { c.q_scale_inv.store<float>(0, INFINITY); }},
      {"BackingTooSmall", ErrorCode::kBackingTooSmall, kContract, any,
       [](InsertCase&, InsertOutputs& out) { out.cache.resize(out.cache.size() / 2); }},
      {"QOutputTooSmall", ErrorCode::kOutputTooSmall, kContract, legacy,
       [](InsertCase&, InsertOutputs& out) { out.q_out.resize(out.q_out.size() / 2); }},
      {"KvBytesTruncated", ErrorCode::kInputTooSmall, kContract, any,
       [](InsertCase& c, InsertOutputs&) { c.kv.bytes.resize(c.kv.bytes.size() - 1); }},
  };
  return table;
}

}  // namespace kvc::testkit
