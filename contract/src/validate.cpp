// validate.cpp: the rules of docs/contract.md §5 (see validate.h).
#include "kvc/validate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kvc/insert_inputs.h"
#include "rule_order.h"
#include "tensor_rules.h"

namespace kvc {
namespace {

using detail::aligned;
using detail::shape_text;

bool is_row512(const TensorMeta& m) { return m.rank() == 2 && m.size(1) == kHeadDim; }
bool is_index_vector(const HostTensor& t) {
  return t.present && t.meta.dtype == DType::kI64 && t.meta.rank() == 1 && t.meta.contiguous();
}
// One fp32 element: shape [1] or a 0-d tensor.
bool is_f32_scalar(const HostTensor& t) { return t.meta.dtype == DType::kF32 && t.meta.numel() == 1; }

// Why a tensor's metadata is not well formed (TensorMeta::well_formed), or "" when it is.
std::string meta_defect(const TensorMeta& m) {
  if (m.sizes.size() != m.strides.size())
    return std::to_string(m.sizes.size()) + " sizes but " + std::to_string(m.strides.size()) + " strides";
  if (dtype_size(m.dtype) == 0) return "unknown dtype code " + std::to_string(static_cast<int>(m.dtype));
  if (m.offset_bytes < 0) return "offset_bytes " + std::to_string(m.offset_bytes);
  for (int d = 0; d < m.rank(); ++d) {
    if (m.size(d) < 0) return "size(" + std::to_string(d) + ") " + std::to_string(m.size(d));
    if (m.stride(d) < 0) return "stride(" + std::to_string(d) + ") " + std::to_string(m.stride(d));
  }
  if (!m.checked_span_bytes()) return shape_text(m) + ": element count or byte extent past int64";
  return {};
}

// Every tensor argument of the case's op, well formed, before anything computes an extent from
// it (the coverage and contiguity rules, the oracle's addressing).
Status check_metadata_well_formed(const InsertCase& c) {
  for (const auto& [name, t] : named_inputs(c)) {
    if (!t->present) continue;
    if (const std::string why = meta_defect(t->meta); !why.empty())
      return Error(ErrorCode::kTensorMetaInvalid, std::string(name) + ": " + why);
  }
  if (c.op == InsertOp::kLegacy) {
    if (const std::string why = meta_defect(c.q_out); !why.empty())
      return Error(ErrorCode::kTensorMetaInvalid, "q_out: " + why);
  }
  return Status::Ok();
}

// One past the last byte of the backing the cache view can touch: the end of the last page's
// records (which a page stride below the dense page makes reach past num_blocks * stride), or
// num_blocks * page stride, whichever is larger. Nothing on int64 overflow.
CheckedI64 cache_view_end(const CacheGeometry& g, const RecordLayout& l) {
  const CheckedI64 backing = g.checked_backing_bytes();
  if (g.num_blocks == 0 || !backing) return backing;
  const CheckedI64 last_page = checked_mul_add(g.num_blocks - 1, g.checked_page_stride_bytes(), g.offset_bytes);
  const CheckedI64 records_end =
      l.paged_regions ? checked_add(last_page, checked_mul(g.block_size, std::int64_t{l.record_bytes()}))
                      : checked_add(checked_mul_add(g.block_size - 1, g.checked_token_stride_bytes(), last_page),
                                    std::int64_t{l.data_bytes});
  if (!records_end) return std::nullopt;
  return std::max(*backing, *records_end);
}

// The cache view's numbers, before anything addresses a record with them: no negative count,
// stride or offset, and every product the ops and the rules form (capacity, page and token
// strides in bytes, dense page, the view's end) inside int64. block_size > 0 is checked before.
Status check_cache_geometry(const CacheGeometry& g, const RecordLayout& l) {
  struct Named {
    const char* what;
    std::int64_t value;
  };
  for (const Named& n : {Named{"num_blocks", g.num_blocks}, Named{"offset_bytes", g.offset_bytes},
                         Named{"stride(0)", g.stride0}, Named{"stride(1)", g.stride1}})
    if (n.value < 0)
      return Error(ErrorCode::kCacheGeometryInvalid, std::string(n.what) + " " + std::to_string(n.value));
  const CheckedI64 products[] = {checked_mul(g.num_blocks, g.block_size), g.checked_page_stride_bytes(),
                                 checked_mul(g.block_size, std::int64_t{l.record_bytes()}),
                                 checked_mul(CheckedI64{g.block_size}, g.checked_token_stride_bytes()),
                                 cache_view_end(g, l)};
  for (const CheckedI64& p : products)
    if (!p)
      return Error(ErrorCode::kCacheGeometryInvalid,
                   std::to_string(g.num_blocks) + " blocks x " + std::to_string(g.block_size) + ", strides (" +
                       std::to_string(g.stride0) + ", " + std::to_string(g.stride1) + "), offset " +
                       std::to_string(g.offset_bytes) + ": an extent past int64");
  return Status::Ok();
}

bool legacy_rotates_q(const InsertCase& c, RecordFormat f) {
  if (c.op != InsertOp::kLegacy || c.q.meta.rank() != 3 || c.q.meta.size(1) == 0) return false;
  if (!is_packed(f)) return true;  // full-cache Q paths always rotate
  return c.padded_heads() > 0 && c.apply_q_rope;
}

Status check_inputs_cover(const InsertCase& c) {
  for (const auto& [name, t] : named_inputs(c))  // metadata already well formed
    if (Status s = detail::check_bytes_cover(name, *t); !s.ok()) return s;
  return Status::Ok();
}

// kv: present, a dtype the op takes, [N, 512], contiguous.
Status check_kv(const InsertCase& c) {
  const bool legacy = c.op == InsertOp::kLegacy;
  if (!c.kv.present) return Error(ErrorCode::kKvShape, "kv is missing");
  const DType kd = c.kv.meta.dtype;
  if (!(kd == DType::kBF16 || (legacy && kd == DType::kF16)))
    return Error(ErrorCode::kKvDtype, legacy ? "legacy op: bf16 or f16" : "KV-only op: bf16 only");
  if (!is_row512(c.kv.meta)) return Error(ErrorCode::kKvShape, "kv is " + shape_text(c.kv.meta));
  if (!c.kv.meta.contiguous())
    return Error(ErrorCode::kKvNotContiguous, "kv row stride " + std::to_string(c.kv.meta.stride(0)));
  return Status::Ok();
}

// q_in of the legacy op: [N, H, 512], contiguous, kv's dtype. kv is checked.
Status check_q_input(const InsertCase& c) {
  if (c.op != InsertOp::kLegacy) return Status::Ok();
  const std::int64_t n = c.kv.meta.size(0);
  if (!c.q.present || c.q.meta.rank() != 3 || c.q.meta.size(2) != kHeadDim || c.q.meta.size(0) != n)
    return Error(ErrorCode::kQShape, c.q.present ? "q_in is " + shape_text(c.q.meta) : "q_in is missing");
  if (!c.q.meta.contiguous()) return Error(ErrorCode::kQNotContiguous);
  if (c.q.meta.dtype != c.kv.meta.dtype) return Error(ErrorCode::kQDtype);
  return Status::Ok();
}

// Every tensor, the cache and q_out on kv's device.
Status check_devices(const InsertCase& c) {
  const int dev = c.kv.meta.device;
  const HostTensor* on_device[] = {&c.slots, &c.positions,   &c.cos_sin,       &c.fp8_scale,
                                   &c.q,     &c.q_scale_inv, &c.kv_norm_weight};
  for (const HostTensor* t : on_device)
    if (t->present && t->meta.device != dev)
      return Error(ErrorCode::kDeviceMismatch, "tensor on device " + std::to_string(t->meta.device));
  if (c.cache.device != dev)
    return Error(ErrorCode::kDeviceMismatch, "k_cache on device " + std::to_string(c.cache.device));
  if (c.op == InsertOp::kLegacy && c.q_out.device != dev)
    return Error(ErrorCode::kDeviceMismatch, "q_out on device " + std::to_string(c.q_out.device));
  return Status::Ok();
}

// The cache view: rank 3, a positive block size that is size(1), stride(2) 1.
Status check_cache_view(const InsertCase& c) {
  if (c.cache.rank != 3) return Error(ErrorCode::kCacheRank, "rank " + std::to_string(c.cache.rank));
  if (c.block_size <= 0)
    return Error(ErrorCode::kBlockSizeNonPositive, "cache_block_size " + std::to_string(c.block_size));
  if (c.cache.block_size != c.block_size)
    return Error(ErrorCode::kBlockSizeMismatch, "size(1) " + std::to_string(c.cache.block_size) +
                                                    " vs cache_block_size " + std::to_string(c.block_size));
  if (c.cache.stride2 != 1) return Error(ErrorCode::kCacheStride2, "stride(2) " + std::to_string(c.cache.stride2));
  return Status::Ok();
}

// Index tensors and row counts: int64 vectors, N positions, M <= N slots; the [max_pos, 64] table.
Status check_index_tensors(const InsertCase& c) {
  const std::int64_t n = c.kv.meta.size(0);
  if (!is_index_vector(c.slots)) return Error(ErrorCode::kSlotsInvalid);
  if (!is_index_vector(c.positions)) return Error(ErrorCode::kPositionsInvalid);
  if (c.positions.meta.size(0) != n)
    return Error(ErrorCode::kPositionsRowMismatch,
                 std::to_string(c.positions.meta.size(0)) + " positions for " + std::to_string(n) + " rows");
  if (c.slots.meta.size(0) > n)
    return Error(ErrorCode::kSlotsExceedRows,
                 std::to_string(c.slots.meta.size(0)) + " slots for " + std::to_string(n) + " rows");
  if (!c.cos_sin.present || c.cos_sin.meta.dtype != DType::kF32 || c.cos_sin.meta.rank() != 2 ||
      c.cos_sin.meta.size(1) != kRopeDim || !c.cos_sin.meta.contiguous())
    return Error(ErrorCode::kCosSinInvalid, c.cos_sin.present ? shape_text(c.cos_sin.meta) : "missing");
  return Status::Ok();
}

// The cache's format (dtype and kv_mxfp8), its width, what it asks of kv and the fp8 scale, and
// its geometry.
Status check_cache_format(const InsertCase& c) {
  const auto format = format_of(c);
  if (!format)
    return Error(ErrorCode::kCacheDtype, "cache dtype code " + std::to_string(static_cast<int>(c.cache.dtype)));
  const RecordLayout& layout = layout_of(*format);
  if (c.cache.width != layout.record_width)
    return Error(ErrorCode::kCacheWidth, "width " + std::to_string(c.cache.width) + " but " + std::string(layout.name) +
                                             " (dtype + kv_mxfp8=" + (c.kv_mxfp8 ? "true" : "false") + ") needs " +
                                             std::to_string(layout.record_width));
  if (*format == RecordFormat::kBf16_512 && c.kv.meta.dtype != DType::kBF16)
    return Error(ErrorCode::kKvDtype, "the bf16 full cache takes bf16 kv only");
  if (*format == RecordFormat::kFp8_512) {
    if (!c.fp8_scale.present) return Error(ErrorCode::kFp8ScaleMissing);
    if (!is_f32_scalar(c.fp8_scale))
      return Error(ErrorCode::kFp8ScaleShape, std::to_string(c.fp8_scale.meta.numel()) + " elements");
  }
  if (Status s = check_cache_geometry(c.cache, layout); !s.ok()) return s;
  if (layout.paged_regions && c.cache.page_stride_bytes() > kMaxPackedPageStride)
    return Error(ErrorCode::kPageStrideTooLarge, std::to_string(c.cache.page_stride_bytes()) + " bytes");
  return Status::Ok();
}

// The packed formats' q_out: q's dtype, [N, Hp, 512] contiguous or the empty [0], a supported
// Hp >= H.
Status check_padded_q_output(const InsertCase& c) {
  const std::int64_t n = c.kv.meta.size(0), heads = c.q.meta.size(1);
  if (c.q_out.dtype != c.kv.meta.dtype) return Error(ErrorCode::kQOutDtype);
  const bool empty = c.q_out.rank() == 1 && c.q_out.size(0) == 0;
  const bool padded =
      c.q_out.rank() == 3 && c.q_out.size(0) == n && c.q_out.size(2) == kHeadDim && c.q_out.contiguous();
  if (!empty && !padded) return Error(ErrorCode::kQOutShape, "q_out is " + shape_text(c.q_out));
  const std::int64_t hp = c.padded_heads();
  if (std::find(kSupportedHeadPadding.begin(), kSupportedHeadPadding.end(), hp) == kSupportedHeadPadding.end())
    return Error(ErrorCode::kUnsupportedHeadPadding, "Hp = " + std::to_string(hp));
  if (hp != 0 && hp < heads)
    return Error(ErrorCode::kHeadPaddingBelowHeads, "Hp = " + std::to_string(hp) + " < H = " + std::to_string(heads));
  return Status::Ok();
}

// The full caches' Q output: q_fp8 (e4m3, with q_scale_inv) or q in place (bf16), q's shape.
Status check_full_cache_q_output(const InsertCase& c, RecordFormat format) {
  const DType want = format == RecordFormat::kFp8_512 ? DType::kE4M3 : DType::kBF16;
  if (c.q_out.dtype != want) return Error(ErrorCode::kQOutDtype);
  if (c.q_out.sizes != c.q.meta.sizes || !c.q_out.contiguous())
    return Error(ErrorCode::kQOutShape, "q_out is " + shape_text(c.q_out) + ", q is " + shape_text(c.q.meta));
  if (format == RecordFormat::kFp8_512 && (!c.q_scale_inv.present || !is_f32_scalar(c.q_scale_inv)))
    return Error(ErrorCode::kQScaleShape);
  return Status::Ok();
}

// The legacy op's Q output, by format (the cache format is checked).
Status check_q_output(const InsertCase& c) {
  if (c.op != InsertOp::kLegacy) return Status::Ok();
  const RecordFormat format = *format_of(c);
  return is_packed(format) ? check_padded_q_output(c) : check_full_cache_q_output(c, format);
}

// The fused kv_norm's weight: KV-only op only, [512] bf16 contiguous.
Status check_kv_norm_weight(const InsertCase& c) {
  if (!c.kv_norm_weight.present) return Status::Ok();
  const TensorMeta& w = c.kv_norm_weight.meta;
  if (c.op == InsertOp::kLegacy)
    return Error(ErrorCode::kNormWeightInvalid, "kv_norm is fused only in front of the KV-only insert");
  if (w.dtype != DType::kBF16 || w.rank() != 1 || w.size(0) != kHeadDim || !w.contiguous())
    return Error(ErrorCode::kNormWeightInvalid, shape_text(w));
  return Status::Ok();
}

// The contract-level rules, in the order the upstream op checks them: the first violated wins.
Status check_contract(const InsertCase& c) {
  for (Status (*check)(const InsertCase&) :
       {check_kv, check_q_input, check_devices, check_cache_view, check_index_tensors, check_cache_format,
        check_q_output, check_kv_norm_weight})
    if (Status s = check(c); !s.ok()) return s;
  return Status::Ok();
}

// Rules whose violation would make even the oracle read or write out of bounds: enforced at
// every level (the upstream ops leave them undefined).
Status check_memory_safety(const InsertCase& c, ValidationLevel) {
  const std::int64_t capacity = c.cache.num_blocks * c.block_size;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    if (s >= capacity)
      return Error(ErrorCode::kSlotOutOfRange, "slot " + std::to_string(s) + " at token " + std::to_string(t) +
                                                   ", capacity " + std::to_string(c.cache.num_blocks) + " x " +
                                                   std::to_string(c.block_size));
  }
  const std::int64_t max_pos = c.cos_sin.meta.size(0);
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    if (!position_is_read(c, t)) continue;
    const std::int64_t p = c.positions.load<std::int64_t>(t);
    if (p < 0 || p >= max_pos)
      return Error(ErrorCode::kPositionOutOfRange, "position " + std::to_string(p) + " at row " + std::to_string(t) +
                                                       ", max_pos " + std::to_string(max_pos));
  }
  return Status::Ok();
}

Status check_strict(const InsertCase& c, ValueAccess access) {
  const RecordLayout& layout = layout_of(*format_of(c));
  const CacheGeometry& g = c.cache;
  if (layout.paged_regions) {
    if (g.page_stride_bytes() < layout.dense_page_bytes(g.block_size))
      return Error(ErrorCode::kPageStrideBelowDense, std::to_string(g.page_stride_bytes()) + " < " +
                                                         std::to_string(layout.dense_page_bytes(g.block_size)) +
                                                         " bytes");
  } else if (g.token_stride_bytes() < layout.data_bytes ||
             g.page_stride_bytes() < g.block_size * g.token_stride_bytes()) {
    return Error(ErrorCode::kPageStrideBelowDense, "token stride " + std::to_string(g.token_stride_bytes()) +
                                                       ", page stride " + std::to_string(g.page_stride_bytes()) +
                                                       " bytes");
  }

  struct Aligned {
    const char* what;
    std::int64_t bytes;
  };
  std::vector<Aligned> checks = {{"kv base", c.kv.meta.offset_bytes},
                                 {"cos_sin_cache base", c.cos_sin.meta.offset_bytes},
                                 {"k_cache base", g.offset_bytes},
                                 {"page stride", g.page_stride_bytes()}};
  if (!layout.paged_regions) checks.push_back({"token stride", g.token_stride_bytes()});
  if (c.op == InsertOp::kLegacy) {
    checks.push_back({"q base", c.q.meta.offset_bytes});
    checks.push_back({"q_out base", c.q_out.offset_bytes});
  }
  for (const Aligned& a : checks)
    if (!aligned(a.bytes))
      return Error(ErrorCode::kMisaligned, std::string(a.what) + " " + std::to_string(a.bytes) + " bytes");

  if (access == ValueAccess::kMetadataOnly) return Status::Ok();
  const auto slot_at = [&](std::int64_t t) { return c.slots.load<std::int64_t>(t); };
  if (const auto r = detail::first_repeated_slot(c.num_inserted(), slot_at))
    return Error(ErrorCode::kDuplicateSlot, "slot " + std::to_string(r->slot) + " at tokens " +
                                                std::to_string(r->first_row) + " and " + std::to_string(r->second_row));
  if (c.fp8_scale.present && *format_of(c) == RecordFormat::kFp8_512) {
    const float s = c.fp8_scale.load<float>(0);
    if (!std::isfinite(s) || !(s > 0.0f)) return Error(ErrorCode::kFp8ScaleValue, "scale " + std::to_string(s));
  }
  if (c.op == InsertOp::kLegacy && *format_of(c) == RecordFormat::kFp8_512) {
    const float s = c.q_scale_inv.load<float>(0);
    if (!std::isfinite(s) || !(s > 0.0f)) return Error(ErrorCode::kQScaleValue, "q scale inverse " + std::to_string(s));
  }
  return Status::Ok();
}

Status validate(const InsertCase& c, ValidationLevel level, ValueAccess access) {
  if (c.op != InsertOp::kKvOnly && c.op != InsertOp::kLegacy)
    return Error(ErrorCode::kWrongOp, "op code " + std::to_string(static_cast<int>(c.op)));
  return detail::validate_in_rule_order(
      c, level, access,
      detail::RuleSteps<InsertCase>{check_metadata_well_formed, check_inputs_cover, check_contract, check_strict,
                                    check_memory_safety});
}

}  // namespace

bool position_is_read(const InsertCase& c, std::int64_t row) {
  const auto format = format_of(c);
  if (format && legacy_rotates_q(c, *format)) return true;
  return row < c.num_inserted() && c.slots.load<std::int64_t>(row) >= 0;
}

Status validate_kv_only_insert(const InsertCase& c, ValidationLevel level, ValueAccess access) {
  if (c.op != InsertOp::kKvOnly) return Error(ErrorCode::kWrongOp, "case is not a KV-only insert");
  return validate(c, level, access);
}

Status validate_legacy_insert(const InsertCase& c, ValidationLevel level, ValueAccess access) {
  if (c.op != InsertOp::kLegacy) return Error(ErrorCode::kWrongOp, "case is not a legacy insert");
  return validate(c, level, access);
}

Status validate_insert(const InsertCase& c, ValidationLevel level, ValueAccess access) {
  return validate(c, level, access);
}

Status validate_outputs(const InsertCase& c, const InsertOutputs& out) {
  // Callable on an unvalidated case too: the geometry and q_out are checked before any extent is
  // formed from them.
  const auto format = format_of(c);
  if (!format)
    return Error(ErrorCode::kCacheDtype, "cache dtype code " + std::to_string(static_cast<int>(c.cache.dtype)));
  if (c.cache.block_size <= 0)
    return Error(ErrorCode::kBlockSizeNonPositive, "size(1) " + std::to_string(c.cache.block_size));
  const RecordLayout& layout = layout_of(*format);
  if (Status s = check_cache_geometry(c.cache, layout); !s.ok()) return s;
  // A page stride below the dense page (allowed at the contract level) makes the last page's
  // records reach past num_blocks * stride: the backing must hold them too.
  const std::int64_t end = *cache_view_end(c.cache, layout);
  if (static_cast<std::int64_t>(out.cache.size()) < end)
    return Error(ErrorCode::kBackingTooSmall,
                 std::to_string(out.cache.size()) + " bytes, the view reaches byte " + std::to_string(end));
  if (c.op == InsertOp::kLegacy) {
    if (const std::string why = meta_defect(c.q_out); !why.empty())
      return Error(ErrorCode::kTensorMetaInvalid, "q_out: " + why);
    if (static_cast<std::int64_t>(out.q_out.size()) < c.q_out.span_bytes())
      return Error(ErrorCode::kOutputTooSmall,
                   std::to_string(out.q_out.size()) + " bytes, q_out needs " + std::to_string(c.q_out.span_bytes()));
  }
  return Status::Ok();
}

Status validate_kv_norm(const HostTensor& kv, const HostTensor& weight, ValueAccess access) {
  const bool values = access == ValueAccess::kMetadataAndValues;
  if (!kv.present || kv.meta.dtype != DType::kBF16) return Error(ErrorCode::kKvDtype, "kv_norm takes bf16 rows");
  if (const std::string why = meta_defect(kv.meta); !why.empty())
    return Error(ErrorCode::kTensorMetaInvalid, "kv: " + why);
  if (weight.present) {
    if (const std::string why = meta_defect(weight.meta); !why.empty())
      return Error(ErrorCode::kTensorMetaInvalid, "kv_norm weight: " + why);
  }
  if (!is_row512(kv.meta)) return Error(ErrorCode::kKvShape, "kv is " + shape_text(kv.meta));
  if (!kv.meta.contiguous()) return Error(ErrorCode::kKvNotContiguous);
  if (values && static_cast<std::int64_t>(kv.bytes.size()) < kv.meta.span_bytes())
    return Error(ErrorCode::kInputTooSmall, "kv");
  if (!weight.present || weight.meta.dtype != DType::kBF16 || weight.meta.rank() != 1 ||
      weight.meta.size(0) != kHeadDim || !weight.meta.contiguous() ||
      (values && static_cast<std::int64_t>(weight.bytes.size()) < weight.meta.span_bytes()))
    return Error(ErrorCode::kNormWeightInvalid);
  if (kv.meta.device != weight.meta.device) return Error(ErrorCode::kDeviceMismatch);
  return Status::Ok();
}

}  // namespace kvc
