// status.h: error codes with stable numbers, and the Status every op and backend returns.
//
// Every validation rule of docs/contract.md §5 has one code here. The numbers never change and
// never get reused (case files and reports store them); a new rule takes a new number. 1xx: rules
// the upstream ops check ("contract"), plus 128-130, which reject calls that torch cannot even
// express (a case meant for the other op, malformed tensor metadata, a cache view whose addresses
// overflow) and so apply at every level; 2xx: rules they do not check, where a violation is
// memory corruption or a race ("strict"); 3xx: the caller's buffers do not fit the case (harness).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvc {

// One row per code reads as a table: keep the formatter out.
// clang-format off
//        name                          number  message
#define KVC_ERROR_CODES(X)                                                                              \
  X(kOk,                               0,   "ok")                                                          \
  X(kKvDtype,                          101, "kv must be bfloat16 (the legacy op also takes float16)")      \
  X(kKvShape,                          102, "kv must be [tokens, 512]")                                    \
  X(kKvNotContiguous,                  103, "kv must be contiguous")                                       \
  X(kDeviceMismatch,                   104, "every tensor must be on the KV device")                       \
  X(kCacheRank,                        105, "k_cache must be a 3-D paged cache")                           \
  X(kBlockSizeNonPositive,             106, "cache_block_size must be > 0")                                \
  X(kBlockSizeMismatch,                107, "k_cache.size(1) must equal cache_block_size")                 \
  X(kCacheStride2,                     108, "k_cache.stride(2) must be 1")                                 \
  X(kCacheDtype,                       109, "cache must be uint8, bfloat16 or float8_e4m3fn")              \
  X(kCacheWidth,                       110, "cache row width does not match its dtype and format")         \
  X(kSlotsInvalid,                     111, "slot_mapping must be contiguous 1-D int64")                   \
  X(kPositionsInvalid,                 112, "position_ids must be contiguous 1-D int64")                   \
  X(kPositionsRowMismatch,             113, "position_ids must have one entry per KV row")                 \
  X(kSlotsExceedRows,                  114, "slot_mapping may not be longer than kv")                      \
  X(kCosSinInvalid,                    115, "cos_sin_cache must be contiguous float32 [max_pos, 64]")      \
  X(kFp8ScaleMissing,                  116, "fp8 cache requires a KV scale")                               \
  X(kFp8ScaleShape,                    117, "fp8 KV scale must be exactly one float32")                    \
  X(kPageStrideTooLarge,               118, "packed page stride must be < 2^31 bytes")                     \
  X(kQDtype,                           119, "q_in dtype must match kv")                                    \
  X(kQShape,                           120, "q_in must be [tokens, heads, 512] with tokens == kv rows")    \
  X(kQNotContiguous,                   121, "q_in must be contiguous")                                     \
  X(kQOutDtype,                        122, "q_out dtype must match q_in (float8_e4m3fn for the fp8 cache)") \
  X(kQOutShape,                        123, "q_out must be empty or [tokens, padded heads, 512]")          \
  X(kUnsupportedHeadPadding,           124, "padded head count must be 0, 8, 16, 32, 64 or 128")           \
  X(kHeadPaddingBelowHeads,            125, "padded head count must be >= the number of heads")            \
  X(kQScaleShape,                      126, "q fp8 reciprocal scale must be exactly one float32")          \
  X(kNormWeightInvalid,                127, "kv_norm weight must be contiguous bfloat16 [512]")            \
  X(kWrongOp,                          128, "the case is for the other op (or names no op)")               \
  X(kTensorMetaInvalid,                129, "tensor metadata is malformed: rank, sign, dtype or an int64 overflow") \
  X(kCacheGeometryInvalid,             130, "cache geometry is malformed: a negative value or an int64 overflow") \
  X(kStackedXDtype,                    140, "stacked_ctx_kv: x must be bfloat16 or float16")               \
  X(kStackedXShape,                    141, "stacked_ctx_kv: x must be [tokens, hidden] with hidden > 0")  \
  X(kStackedXNotContiguous,            142, "stacked_ctx_kv: x must be contiguous")                        \
  X(kStackedLayerCount,                143, "stacked_ctx_kv: the model must have 1 to 32 layers")          \
  X(kStackedWeightDtype,               144, "stacked_ctx_kv: a QKV weight must be bfloat16 or float16")    \
  X(kStackedWeightShape,               145, "stacked_ctx_kv: a QKV weight must be [q_size + 2 * kv_size, hidden]") \
  X(kStackedWeightNotContiguous,       146, "stacked_ctx_kv: a QKV weight must be contiguous")             \
  X(kStackedBiasInvalid,               147, "stacked_ctx_kv: a QKV bias must be contiguous [q_size + 2 * kv_size] of the weight's dtype") \
  X(kStackedNormWeightInvalid,         148, "stacked_ctx_kv: a K-norm weight must be contiguous [head_dim] of the weight's dtype") \
  X(kStackedHeadGeometry,              149, "stacked_ctx_kv: head_dim must be even in [2, 512], kv heads >= 1, q_size >= 0") \
  X(kStackedPositionsInvalid,          150, "stacked_ctx_kv: positions must be contiguous 1-D int64, one per token") \
  X(kStackedCacheLocInvalid,           151, "stacked_ctx_kv: cache_loc must be contiguous int64, [tokens] (or [B, S] with commit_lens, B * S == tokens)") \
  X(kStackedCosSinInvalid,             152, "stacked_ctx_kv: a rotary table must be contiguous float32 [max_pos, head_dim]") \
  X(kStackedPoolDtype,                 153, "stacked_ctx_kv: K and V pools must have x's dtype")           \
  X(kStackedPoolShape,                 154, "stacked_ctx_kv: K and V pools must be [slots, kv heads, head_dim]") \
  X(kStackedPoolStride,                155, "stacked_ctx_kv: a pool slot must be contiguous: stride(2) == 1, stride(1) == head_dim") \
  X(kStackedDeviceMismatch,            156, "stacked_ctx_kv: every tensor must be on x's device")          \
  X(kStackedPathIneligible,            157, "stacked_ctx_kv: the stacked or fused path was requested for a model ineligible for it") \
  X(kStackedParamsMismatch,            158, "stacked_ctx_kv: the stacked weight and bias must be the layers' KV rows, concatenated") \
  X(kStackedNegativeCacheLoc,          159, "stacked_ctx_kv: a negative cache_loc entry under the slot-0-reserved cache_loc policy") \
  X(kStackedCommitLensInvalid,         160, "stacked_ctx_kv: commit_lens must be contiguous 1-D int64 [B] with cache_loc [B, S]") \
  X(kStackedCommitLenOutOfRange,       161, "stacked_ctx_kv: a commit length lies outside [0, S]") \
  X(kStoreIndicesInvalid,              131, "store indices must be contiguous 1-D int32 or int64")        \
  X(kStoreIndicesRowMismatch,          132, "the store op takes exactly one index per row")               \
  X(kStoreCacheNotPacked,              133, "the store op writes packed records: its cache must be uint8") \
  X(kStoreCacheRank,                   134, "the store cache must be [pages, block_size, width] or [pages, page bytes]") \
  X(kStorePageBytesTooSmall,           135, "a [pages, page bytes] store cache's page must hold block_size records") \
  X(kPageStrideBelowDense,             201, "page stride is smaller than the dense page")                  \
  X(kMisaligned,                       202, "a base address or stride is not 16-byte aligned")             \
  X(kSlotOutOfRange,                   203, "a slot lies beyond num_blocks * block_size")                  \
  X(kDuplicateSlot,                    204, "two tokens map to the same slot")                             \
  X(kPositionOutOfRange,               205, "a position lies outside [0, max_pos)")                        \
  X(kFp8ScaleValue,                    206, "fp8 KV scale must be finite and > 0")                         \
  X(kQScaleValue,                      207, "q fp8 reciprocal scale must be finite and > 0")               \
  X(kStackedPoolSlotsOverlap,          210, "stacked_ctx_kv: a pool's slot stride is smaller than one slot") \
  X(kStackedSlotOutOfRange,            211, "stacked_ctx_kv: a cache_loc entry lies beyond a layer's pool") \
  X(kStackedDuplicateSlot,             212, "stacked_ctx_kv: two tokens map to the same cache_loc")        \
  X(kStackedPositionOutOfRange,        213, "stacked_ctx_kv: a written token's position lies outside a rotary table") \
  X(kBackingTooSmall,                  301, "the cache backing buffer does not cover the cache view")      \
  X(kOutputTooSmall,                   302, "the q output buffer does not match q_out")               \
  X(kStackedPoolBufferTooSmall,        310, "stacked_ctx_kv: a K or V pool buffer does not cover its pool view") \
  X(kInputTooSmall,                    303, "a tensor's bytes do not cover its shape and strides")
// clang-format on

enum class ErrorCode : std::uint16_t {
#define KVC_X(name, number, message) name = number,
  KVC_ERROR_CODES(KVC_X)
#undef KVC_X
};

inline constexpr ErrorCode kAllErrorCodes[] = {
#define KVC_X(name, number, message) ErrorCode::name,
    KVC_ERROR_CODES(KVC_X)
#undef KVC_X
};

// "kDuplicateSlot" etc.
std::string_view error_name(ErrorCode code);
std::string_view error_message(ErrorCode code);
// Looks a number up; false when no code has it.
bool error_code_from_number(int number, ErrorCode* out);

// The result of validating or running a case. `detail` names the offending value when there is
// one ("slot 17 of 4 blocks x 16"), so a rejection can be acted on from the message alone.
struct Status {
  ErrorCode code = ErrorCode::kOk;
  std::string detail;

  bool ok() const { return code == ErrorCode::kOk; }
  static Status Ok() { return Status{}; }
  // "E204 kDuplicateSlot: two tokens map to the same slot (slot 5 at tokens 1 and 3)"
  std::string ToString() const;
};

inline Status Error(ErrorCode code, std::string detail = {}) { return Status{code, std::move(detail)}; }

}  // namespace kvc
