// enum_mapping.h: the kernel ABI's C enums and status numbers <-> the contract's C++ enums. The
// ABI promises that its numbers are the contract's (kvc/kernel_abi.h: "the numbers are
// kvconform's RecordFormat numbers", validation codes are ErrorCode numbers, policy 0 is the
// contract's choice). Every conversion between the two goes through here: a cast next to a
// static_assert per value, so that renumbering either side fails to compile instead of silently
// declaring or checking the wrong thing, or a switch that names each value.
#pragma once

#include <cstdint>
#include <optional>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/profile.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"
#include "kvc/status.h"

namespace kvc::abi {

// ---- status: 0 and the validation codes are ErrorCode numbers; 40x are the ABI's own ----------

constexpr int status_of(ErrorCode code) { return static_cast<int>(code); }

namespace detail {
constexpr bool is_error_code_number(int number) {
  for (ErrorCode c : kAllErrorCodes)
    if (status_of(c) == number) return true;
  return false;
}
}  // namespace detail

static_assert(status_of(ErrorCode::kOk) == KVC_STATUS_OK, "ABI status 0 is ErrorCode::kOk");
static_assert(!detail::is_error_code_number(KVC_STATUS_CUDA_ERROR) &&
                  !detail::is_error_code_number(KVC_STATUS_UNSUPPORTED) &&
                  !detail::is_error_code_number(KVC_STATUS_BAD_ARGUMENT),
              "the ABI's own statuses must be no validation code");

// ---- record formats ---------------------------------------------------------------------------

constexpr std::int32_t abi_format(RecordFormat f) { return static_cast<std::int32_t>(f); }

// The cache format an ABI format number names; nothing for KVC_FORMAT_NONE or an unknown number.
constexpr std::optional<RecordFormat> record_format_of(std::int32_t format) {
  for (RecordFormat f : kAllFormats)
    if (abi_format(f) == format) return f;
  return std::nullopt;
}

static_assert(abi_format(RecordFormat::kPacked584) == KVC_FORMAT_PACKED584, "kvc_format vs RecordFormat");
static_assert(abi_format(RecordFormat::kPacked528) == KVC_FORMAT_PACKED528, "kvc_format vs RecordFormat");
static_assert(abi_format(RecordFormat::kFp8_512) == KVC_FORMAT_FP8_512, "kvc_format vs RecordFormat");
static_assert(abi_format(RecordFormat::kBf16_512) == KVC_FORMAT_BF16_512, "kvc_format vs RecordFormat");
static_assert(!record_format_of(KVC_FORMAT_NONE).has_value(), "KVC_FORMAT_NONE names no cache format");

// ---- op ids: the two insert ops are InsertOp's numbers ----------------------------------------

constexpr std::int32_t abi_op(InsertOp op) { return static_cast<std::int32_t>(op); }

static_assert(abi_op(InsertOp::kKvOnly) == KVC_OP_KV_ONLY_INSERT, "kvc_op vs InsertOp");
static_assert(abi_op(InsertOp::kLegacy) == KVC_OP_LEGACY_INSERT, "kvc_op vs InsertOp");

// ---- rsqrt mode -------------------------------------------------------------------------------

constexpr std::int32_t abi_rsqrt(RsqrtMode m) { return static_cast<std::int32_t>(m); }

static_assert(abi_rsqrt(RsqrtMode::kCorrectlyRounded) == KVC_RSQRT_CORRECTLY_ROUNDED, "kvc_rsqrt_mode vs RsqrtMode");
static_assert(abi_rsqrt(RsqrtMode::kApproximate) == KVC_RSQRT_APPROXIMATE, "kvc_rsqrt_mode vs RsqrtMode");

// ---- profile policies (kvc_op_support's fields since 1.1) vs kvc/profile.h ----------------------

constexpr std::int32_t abi_policy(RopePolicy p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(ClampOrder p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(InfBlockInverse p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(PadBytePolicy p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(ExponentRule p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(AmaxFloor p) { return static_cast<std::int32_t>(p); }

static_assert(abi_policy(RopePolicy::kRotate) == KVC_ROPE_ROTATE, "kvc_rope_policy vs RopePolicy");
static_assert(abi_policy(RopePolicy::kNone) == KVC_ROPE_NONE, "kvc_rope_policy vs RopePolicy");
static_assert(abi_policy(ClampOrder::kMaxThenMin) == KVC_CLAMP_MAX_THEN_MIN, "kvc_clamp_order vs ClampOrder");
static_assert(abi_policy(ClampOrder::kMinThenMax) == KVC_CLAMP_MIN_THEN_MAX, "kvc_clamp_order vs ClampOrder");
static_assert(abi_policy(InfBlockInverse::kZero) == KVC_INF_BLOCK_ZERO_INVERSE, "kvc_inf_block_policy");
static_assert(abi_policy(InfBlockInverse::kNegativeInfinity) == KVC_INF_BLOCK_NEGATIVE_INFINITY_INVERSE,
              "kvc_inf_block_policy vs InfBlockInverse");
static_assert(abi_policy(PadBytePolicy::kWritten) == KVC_PAD_BYTE_WRITTEN, "kvc_pad_byte_policy vs PadBytePolicy");
static_assert(abi_policy(PadBytePolicy::kNotWritten) == KVC_PAD_BYTE_NOT_WRITTEN,
              "kvc_pad_byte_policy vs PadBytePolicy");
static_assert(abi_policy(ExponentRule::kDeviceLog2f) == KVC_SCALE_EXPONENT_LOG2F,
              "kvc_scale_exponent_rule vs ExponentRule");
static_assert(abi_policy(ExponentRule::kExact) == KVC_SCALE_EXPONENT_EXACT, "kvc_scale_exponent_rule vs ExponentRule");
static_assert(abi_policy(AmaxFloor::kBeforeDivide) == KVC_AMAX_FLOOR_BEFORE_DIVIDE, "kvc_amax_floor_policy");
static_assert(abi_policy(AmaxFloor::kAfterDivide) == KVC_AMAX_FLOOR_AFTER_DIVIDE, "kvc_amax_floor_policy");

// ---- stacked policies (kvc_op_support's fields since 1.3) vs kvc/stacked_profile.h -------------

constexpr std::int32_t abi_policy(StackedRope p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(KNormReduction p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(KNormReciprocal p) { return static_cast<std::int32_t>(p); }
constexpr std::int32_t abi_policy(CacheLocPolicy p) { return static_cast<std::int32_t>(p); }

static_assert(abi_policy(StackedRope::kContract) == KVC_STACKED_ROPE_CONTRACT, "kvc_stacked_rope vs StackedRope");
static_assert(abi_policy(StackedRope::kCudaFmaPair) == KVC_STACKED_ROPE_FMA_PAIR, "kvc_stacked_rope vs StackedRope");
static_assert(abi_policy(KNormReduction::kSequential) == KVC_K_NORM_SEQUENTIAL, "kvc_k_norm_reduction");
static_assert(abi_policy(KNormReduction::kLaneTree) == KVC_K_NORM_LANE_TREE, "kvc_k_norm_reduction");
static_assert(abi_policy(KNormReduction::kUnspecified) == KVC_K_NORM_UNSPECIFIED, "kvc_k_norm_reduction");
static_assert(abi_policy(KNormReciprocal::kCorrectlyRounded) == KVC_K_NORM_RSQRT_RN, "kvc_k_norm_reciprocal");
static_assert(abi_policy(KNormReciprocal::kApproximate) == KVC_K_NORM_RECIPROCAL_APPROX, "kvc_k_norm_reciprocal");
static_assert(abi_policy(CacheLocPolicy::kNegativeSkipped) == KVC_CACHE_LOC_SKIP_NEGATIVE, "kvc_cache_loc_policy");
static_assert(abi_policy(CacheLocPolicy::kSlotZeroReserved) == KVC_CACHE_LOC_SLOT0_RESERVED, "kvc_cache_loc_policy");

// ---- stacked context-KV path ------------------------------------------------------------------

// The request a kvc_stacked_path number makes; nothing for a number that is no kvc_stacked_path.
constexpr std::optional<StackedPathRequest> stacked_path_request_of(std::int32_t path) {
  switch (path) {
    case KVC_STACKED_PATH_AUTO: return StackedPathRequest::kAuto;
    case KVC_STACKED_PATH_PER_LAYER: return StackedPathRequest::kPerLayer;
    case KVC_STACKED_PATH_STACKED: return StackedPathRequest::kStacked;
    case KVC_STACKED_PATH_FUSED: return StackedPathRequest::kFused;
    default: return std::nullopt;
  }
}

// The support query whose stacked policies hold for a run on kvc_stacked_path `path` (the path the
// library reports it took, else the one the call forced): the fused path's own query
// (KVC_OP_STACKED_CTX_KV_FUSED, since 1.3) for KVC_STACKED_PATH_FUSED, else KVC_OP_STACKED_CTX_KV.
constexpr std::int32_t stacked_declaration_op(std::int32_t path) {
  return path == KVC_STACKED_PATH_FUSED ? KVC_OP_STACKED_CTX_KV_FUSED : KVC_OP_STACKED_CTX_KV;
}

// The kvc_stacked_path that names the path taken (path_taken).
constexpr std::int32_t abi_stacked_path(StackedPath p) {
  switch (p) {
    case StackedPath::kPerLayer: return KVC_STACKED_PATH_PER_LAYER;
    case StackedPath::kStacked: return KVC_STACKED_PATH_STACKED;
    case StackedPath::kFused: return KVC_STACKED_PATH_FUSED;
  }
  return KVC_STACKED_PATH_PER_LAYER;
}

// The path a path_taken number names; nothing for a number that names no path (AUTO included).
constexpr std::optional<StackedPath> stacked_path_of(std::int32_t path_taken) {
  switch (path_taken) {
    case KVC_STACKED_PATH_PER_LAYER: return StackedPath::kPerLayer;
    case KVC_STACKED_PATH_STACKED: return StackedPath::kStacked;
    case KVC_STACKED_PATH_FUSED: return StackedPath::kFused;
    default: return std::nullopt;
  }
}

static_assert(abi_stacked_path(StackedPath::kFused) == KVC_STACKED_PATH_FUSED, "kvc_stacked_path vs StackedPath");
static_assert(*stacked_path_request_of(KVC_STACKED_PATH_FUSED) == StackedPathRequest::kFused,
              "kvc_stacked_path vs StackedPathRequest");

}  // namespace kvc::abi
