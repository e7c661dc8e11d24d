/* kernel_abi.h: the C ABI through which kvconform calls every kernel library, ours included.
 *
 * A library that implements these entry points (a shared object the suite dlopens, or our own
 * static kvc::kernels) can be run through the whole GPU suite, the device fuzz campaigns and the
 * benchmarks. A vLLM, SGLang or FlashInfer developer writes a small shim that unpacks the
 * arguments below and calls their op; nothing in the suite changes.
 *
 * Rules of the boundary (they are what keeps it stable across compilers and languages):
 *  - C only: no C++ types, no exceptions cross it. Every entry point returns an int status that
 *    is one of kvconform's stable validation codes (docs/contract.md, "Validation"): 0 = ok,
 *    1xx/2xx = the input was rejected before anything was launched or written, 4xx = a CUDA
 *    error (kvc_status_cuda_error). The message, if any, goes into the caller's buffer (always
 *    NUL-terminated when capacity > 0).
 *  - Tensors are DLPack DLTensor (device kDLCUDA, strides in elements, byte_offset honoured).
 *    Absent optional tensors are NULL. The fp8 e4m3fn dtype is DLPack 1.1's code, declared below
 *    when the installed dlpack.h predates it.
 *  - Work is enqueued on `stream` (a cudaStream_t passed as void*, NULL = legacy default stream)
 *    and not synchronised: the call is capturable in a CUDA graph.
 *  - Argument structs start with `struct_size`; a library reads only the fields that size covers,
 *    so fields can be appended in a later minor version without breaking older shims.
 *
 * Version: KVC_KERNEL_ABI_VERSION; a library reports the version it was built against and the
 * suite refuses a library whose major differs.
 */
#ifndef KVC_KERNEL_ABI_H_
#define KVC_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVC_KERNEL_ABI_VERSION_MAJOR 1
#define KVC_KERNEL_ABI_VERSION_MINOR 3
#define KVC_KERNEL_ABI_VERSION       (KVC_KERNEL_ABI_VERSION_MAJOR * 1000 + KVC_KERNEL_ABI_VERSION_MINOR)

/* DLPack 1.1 type codes that older dlpack.h headers (Debian 12 ships 0.6) do not name. */
#define KVC_DL_BOOL          6u
#define KVC_DL_FLOAT8_E4M3FN 10u

/* Symbol visibility for shared-object implementations. */
#if defined(__GNUC__)
#define KVC_ABI_EXPORT __attribute__((visibility("default")))
#else
#define KVC_ABI_EXPORT
#endif

/* Status codes outside the validation table: a CUDA launch or runtime error, and an op the
 * library does not implement. Validation codes (1xx, 2xx) are kvconform's ErrorCode numbers. */
#define KVC_STATUS_OK           0
#define KVC_STATUS_CUDA_ERROR   401
#define KVC_STATUS_UNSUPPORTED  402
#define KVC_STATUS_BAD_ARGUMENT 403 /* NULL args, struct_size too small, non-CUDA tensor */

typedef enum kvc_op {
  KVC_OP_KV_ONLY_INSERT = 0, /* fused_deepseek_v4_kv_rope_insert, optional kv_norm in front */
  KVC_OP_LEGACY_INSERT = 1,  /* the Q+KV "dummy query" op, and the full-cache Q paths */
  KVC_OP_KV_NORM = 2,        /* standalone kv_norm */
  KVC_OP_STORE_ROTATED = 3,  /* since 1.1: normed and rotated rows -> packed records (no RoPE) */
  KVC_OP_STACKED_CTX_KV = 4, /* since 1.1: DSpark stacked context-KV projection and pool write */
  /* Since 1.2, a support query only: kvc_kv_only_insert with kv_norm_weight set (kv_norm fused in
   * front). A library that binds only the plain insert declares it unsupported and its fused
   * cases are skipped. A library built against 1.0 or 1.1 is asked KVC_OP_KV_ONLY_INSERT instead. */
  KVC_OP_KV_ONLY_INSERT_KV_NORM = 5,
  /* Since 1.3, a support query only: kvc_stacked_ctx_kv's fused path (KVC_STACKED_PATH_FUSED), its
   * support and its stacked policies (the fused path of a real library has another profile than
   * its stacked and per-layer paths, which KVC_OP_STACKED_CTX_KV answers for). A library built
   * against 1.2 or earlier has no fused path: the suite reads this op as unsupported. */
  KVC_OP_STACKED_CTX_KV_FUSED = 6
} kvc_op;

/* Record formats; the numbers are kvconform's RecordFormat numbers. */
typedef enum kvc_format {
  KVC_FORMAT_PACKED584 = 0,
  KVC_FORMAT_PACKED528 = 1,
  KVC_FORMAT_FP8_512 = 2,
  KVC_FORMAT_BF16_512 = 3,
  KVC_FORMAT_NONE = 255 /* kv_norm: no cache */
} kvc_format;

/* How a library's norms compute 1/sqrt: exactly as the contract (correctly rounded, CUDA's
 * __frsqrt_rn), or with the hardware approximation (rsqrtf), which the suite then checks in the
 * contract's "approximate rsqrt" mode (each row reproduced exactly by some r' within 2 fp32 ulp
 * of the correctly rounded r). */
typedef enum kvc_rsqrt_mode { KVC_RSQRT_CORRECTLY_ROUNDED = 0, KVC_RSQRT_APPROXIMATE = 1 } kvc_rsqrt_mode;

/* Implementation profile policies (since 1.1; docs/contract.md §6): where real kernels
 * legitimately differ from the contract. 0 is always the contract's choice (profile vllm); the
 * suite compares a library's bytes with the oracle run under the policies it declares. */
typedef enum kvc_rope_policy {
  KVC_ROPE_ROTATE = 0, /* the op rotates dims 448..511; packed584 stores bf() of them */
  KVC_ROPE_NONE = 1    /* rows arrive rotated: no rotation, packed584 stores the input bits */
} kvc_rope_policy;
typedef enum kvc_clamp_order {
  KVC_CLAMP_MAX_THEN_MIN = 0, /* fminf(fmaxf(v, -448), 448): NaN -> 0xFE */
  KVC_CLAMP_MIN_THEN_MAX = 1  /* fmaxf(fminf(v, 448), -448): NaN -> 0x7E */
} kvc_clamp_order;
typedef enum kvc_inf_block_policy {
  KVC_INF_BLOCK_ZERO_INVERSE = 0,             /* a block holding +-Inf: inv = 2^-E = 0 */
  KVC_INF_BLOCK_NEGATIVE_INFINITY_INVERSE = 1 /* inv = -Inf (bits 0xFF800000) */
} kvc_inf_block_policy;
typedef enum kvc_pad_byte_policy {
  KVC_PAD_BYTE_WRITTEN = 0,    /* packed584 scale byte 7 written 0x00 */
  KVC_PAD_BYTE_NOT_WRITTEN = 1 /* left as it was */
} kvc_pad_byte_policy;
typedef enum kvc_scale_exponent_rule {
  KVC_SCALE_EXPONENT_LOG2F = 0, /* E = ceil(RN_f32(log2 q)), the device log2f */
  KVC_SCALE_EXPONENT_EXACT = 1  /* E = ceil(log2 q) from the bits of q */
} kvc_scale_exponent_rule;
typedef enum kvc_amax_floor_policy {
  KVC_AMAX_FLOOR_BEFORE_DIVIDE = 0, /* q = max(amax, 1e-4) / 448 */
  KVC_AMAX_FLOOR_AFTER_DIVIDE = 1   /* q = max(amax / 448, 1e-4) */
} kvc_amax_floor_policy;

/* Since 1.3: the stacked context-KV op's policies (docs/contract.md §4.5, §6.2.1), declared for
 * KVC_OP_STACKED_CTX_KV (the per-layer and stacked paths) and KVC_OP_STACKED_CTX_KV_FUSED (the fused
 * path). The numbers are kvconform's StackedProfile alternatives; 0 is always the contract's. A
 * library built against 1.2 or earlier (or a struct_size that stops before them) declares the
 * contract's for both paths it has. */
typedef enum kvc_stacked_rope {
  KVC_STACKED_ROPE_CONTRACT = 0, /* a' = fma(a, c, -fl(b*s)), b' = fma(a, s, fl(b*c)) (§2.7) */
  KVC_STACKED_ROPE_FMA_PAIR = 1  /* a' = fma(a, c, -fl(b*s)), b' = fma(b, c, fl(a*s)) */
} kvc_stacked_rope;
typedef enum kvc_k_norm_reduction {
  KVC_K_NORM_SEQUENTIAL = 0, /* S = fma(e[d], e[d], S), d = 0..hd-1 */
  KVC_K_NORM_LANE_TREE = 1,  /* 32 lanes of ceil(hd/32) contiguous dims, then the butterfly (§4.5) */
  KVC_K_NORM_UNSPECIFIED = 2 /* any order: judged under a derived budget */
} kvc_k_norm_reduction;
typedef enum kvc_k_norm_reciprocal {
  KVC_K_NORM_RSQRT_RN = 0,         /* rsqrt_rn(ms + eps) */
  KVC_K_NORM_RECIPROCAL_APPROX = 1 /* an approximate sqrt, then a full division: within 4 fp32 ulps */
} kvc_k_norm_reciprocal;
typedef enum kvc_cache_loc_policy {
  KVC_CACHE_LOC_SKIP_NEGATIVE = 0, /* loc < 0 writes nothing; slot 0 is a slot */
  KVC_CACHE_LOC_SLOT0_RESERVED = 1 /* loc 0 writes nothing; loc < 0 is an error (159) */
} kvc_cache_loc_policy;

/* Since 1.2: the geometry a library accepts for an (op, format, kv dtype), and the validation it
 * does itself. 0 is always "whatever the contract allows", so a library built against 1.0 or 1.1
 * (whose struct the suite zeroes first) declares no limits and every validation code. The suite
 * builds its cases in the library's own layout where the contract allows it and reports the rest
 * skipped, naming the limit.
 *
 * Order of answers: a call outside what the library declares (an op, format or kv dtype it does
 * not support, or geometry outside its limits) returns KVC_STATUS_UNSUPPORTED before any
 * validation code, whatever else is wrong with it; a call inside its declared support gets the
 * validation codes it declares it enforces. A dtype the contract itself does not take (a float32
 * kv, a cache dtype naming no format) is invalid, not unsupported: its validation code (101).
 * The suite sends calls outside the declared support only from `kvconform probe`. */
typedef enum kvc_page_stride_rule {
  KVC_PAGE_STRIDE_ANY = 0,        /* any page stride (stride(0) in bytes) the contract allows */
  KVC_PAGE_STRIDE_ALIGNED_UP = 1, /* exactly ceil(block_size * record bytes / page_stride_align) *
                                   * page_stride_align (SGLang's store: align 576) */
  KVC_PAGE_STRIDE_DENSE = 2       /* exactly block_size * record bytes */
} kvc_page_stride_rule;
typedef enum kvc_block_size_rule {
  KVC_BLOCK_SIZE_ANY = 0,
  KVC_BLOCK_SIZE_POWER_OF_TWO = 1,
  KVC_BLOCK_SIZE_LISTED = 2 /* one of block_sizes[0 .. block_size_count) */
} kvc_block_size_rule;
/* kvc_op_support.cache_ranks and .index_dtypes are bit masks; 0 = every one the contract allows
 * for the op (the insert ops: a 3-D cache, int64 slot_mapping; the store op: 2-D or 3-D, int32 or
 * int64 indices). */
#define KVC_CACHE_RANK_2 (1u << 2)
#define KVC_CACHE_RANK_3 (1u << 3)
#define KVC_INDEX_INT32  (1u << 0)
#define KVC_INDEX_INT64  (1u << 1)
typedef enum kvc_validation_scope {
  KVC_VALIDATION_ALL = 0,    /* every validation code of the contract that applies to the op */
  KVC_VALIDATION_LISTED = 1, /* only enforced_codes[0 .. enforced_code_count) */
  KVC_VALIDATION_NONE = 2    /* none: a rule-breaking call is the caller's fault (undefined) */
} kvc_validation_scope;

/* What a library says about one (op, format, kv dtype) combination. */
typedef struct kvc_op_support {
  uint32_t struct_size;
  int32_t supported;     /* 0: the suite reports every such case as skipped, with `reason` */
  int32_t q_norm_rsqrt;  /* kvc_rsqrt_mode of the legacy op's q-norm */
  int32_t kv_norm_rsqrt; /* kvc_rsqrt_mode of kv_norm (fused or standalone) */
  const char* reason;    /* static string when unsupported, else NULL */
  /* Since 1.1: the other policies of the combination's profile (with the two rsqrt fields above,
   * the whole profile). A library writes them only when struct_size covers them; the suite zeroes
   * the struct first, and reads a library built against 1.0 as profile vllm. */
  int32_t rope;           /* kvc_rope_policy */
  int32_t clamp_order;    /* kvc_clamp_order */
  int32_t inf_block;      /* kvc_inf_block_policy */
  int32_t pad_byte;       /* kvc_pad_byte_policy */
  int32_t scale_exponent; /* kvc_scale_exponent_rule */
  int32_t amax_floor;     /* kvc_amax_floor_policy */
  /* Since 1.2: limits and validation (above). Arrays are static, owned by the library. */
  int32_t page_stride_rule;      /* kvc_page_stride_rule */
  int32_t page_stride_align;     /* bytes, KVC_PAGE_STRIDE_ALIGNED_UP only */
  int32_t block_size_rule;       /* kvc_block_size_rule */
  int32_t block_size_count;      /* KVC_BLOCK_SIZE_LISTED only */
  const int64_t* block_sizes;    /* KVC_BLOCK_SIZE_LISTED only */
  uint32_t cache_ranks;          /* KVC_CACHE_RANK_* mask, 0 = the contract's */
  uint32_t index_dtypes;         /* KVC_INDEX_* mask, 0 = the contract's */
  int32_t validation;            /* kvc_validation_scope */
  int32_t enforced_code_count;   /* KVC_VALIDATION_LISTED only */
  const int32_t* enforced_codes; /* KVC_VALIDATION_LISTED only: 1xx and 2xx codes */
  /* Since 1.3: the stacked policies (above), read for KVC_OP_STACKED_CTX_KV and
   * KVC_OP_STACKED_CTX_KV_FUSED only. */
  int32_t stacked_rope;      /* kvc_stacked_rope */
  int32_t k_norm_reduction;  /* kvc_k_norm_reduction */
  int32_t k_norm_reciprocal; /* kvc_k_norm_reciprocal */
  int32_t cache_loc;         /* kvc_cache_loc_policy */
} kvc_op_support;

/* kv_dtype is a DLDataType code: kDLBfloat (bf16) or kDLFloat (with bits 16: fp16). */
typedef struct kvc_library_info {
  uint32_t struct_size;
  int32_t abi_version; /* KVC_KERNEL_ABI_VERSION the library was built against */
  const char* name;    /* e.g. "kvconform-kernels 0.1.0" */
} kvc_library_info;

KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out);
KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out);

/* KV-only insert: every row t < slot_mapping.size(0) with slot >= 0 is (kv_norm'd,) rotated,
 * encoded and written into its record; rows past slot_mapping are never read. */
typedef struct kvc_kv_only_insert_args {
  uint32_t struct_size;
  const DLTensor* kv;             /* [N, 512] bf16 */
  const DLTensor* kv_cache;       /* [num_blocks, block_size, width] uint8 / e4m3fn / bf16 */
  const DLTensor* slot_mapping;   /* [M <= N] int64, -1 = skip */
  const DLTensor* position_ids;   /* [N] int64 */
  const DLTensor* cos_sin_cache;  /* [max_pos, 64] fp32 */
  const DLTensor* fp8_scale;      /* [1] fp32, fp8_512 only, else NULL */
  const DLTensor* kv_norm_weight; /* [512] bf16 enables kv_norm fused in front; NULL = off */
  float kv_norm_eps;
  int64_t block_size;
  int32_t kv_mxfp8; /* uint8 cache: packed528 when nonzero, packed584 otherwise */
} kvc_kv_only_insert_args;

/* Legacy Q+KV insert. Packed caches: q_out is [N, Hp, 512] of q's dtype (Hp in {8,..,128}) or a
 * 1-D empty tensor (Hp = 0). fp8_512: q_out is q_fp8 [N, H, 512] e4m3fn and q_scale_inv [1] fp32.
 * bf16_512: Q is rotated in place; q_out must describe the same memory as q. */
typedef struct kvc_legacy_insert_args {
  uint32_t struct_size;
  const DLTensor* q; /* [N, H, 512] bf16 or fp16 */
  const DLTensor* q_out;
  const DLTensor* q_scale_inv; /* fp8_512 only, else NULL */
  const DLTensor* kv;          /* [N, 512], q's dtype */
  const DLTensor* kv_cache;
  const DLTensor* slot_mapping;
  const DLTensor* position_ids;
  const DLTensor* cos_sin_cache;
  const DLTensor* fp8_scale;
  int64_t block_size;
  int32_t kv_mxfp8;
  float eps;
  int32_t apply_q_norm;
  int32_t apply_q_rope;  /* packed caches only; the full-cache Q paths always rotate */
  int32_t q_interleaved; /* packed caches only: q_in and q_out in the chunk-interleaved order */
  /* Test-only: 0 = the library's own grid choice; 1 = force the per-token grid; 2 = force the
   * large-batch grid. Bytes must not depend on it; libraries without a choice ignore it. */
  int32_t force_grid;
} kvc_legacy_insert_args;

typedef struct kvc_kv_norm_args {
  uint32_t struct_size;
  const DLTensor* kv;     /* [N, 512] bf16 */
  const DLTensor* weight; /* [512] bf16 */
  const DLTensor* out;    /* [N, 512] bf16; may alias kv */
  float eps;
} kvc_kv_norm_args;

KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,
                                      size_t error_capacity);
KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,
                                     size_t error_capacity);
KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity);

/* Store op (since 1.1, optional entry point; docs/contract.md §6.4): rows already normed and
 * rotated -> one packed584 or packed528 record per row, at the slot indices[t] (negative: the row
 * writes nothing). The cache is ours, [num_blocks, block_size, 584 | 528], or SGLang's
 * [num_blocks, page bytes] with page bytes >= block_size records (SGLang: ceil(584 * bs / 576) *
 * 576); either way page stride = stride(0) bytes. */
typedef struct kvc_store_rotated_args {
  uint32_t struct_size;
  const DLTensor* rows;     /* [N, 512] bf16 */
  const DLTensor* kv_cache; /* uint8, rank 3 or 2 (above) */
  const DLTensor* indices;  /* [N] int32 or int64 */
  int64_t block_size;
  int32_t kv_mxfp8; /* packed528 when nonzero, packed584 otherwise */
} kvc_store_rotated_args;

KVC_ABI_EXPORT int kvc_store_rotated(const kvc_store_rotated_args* args, void* stream, char* error,
                                     size_t error_capacity);

/* DSpark stacked context-KV projection (since 1.1, optional entry point kvc_stacked_ctx_kv;
 * docs/contract.md §4.5): for every layer, x [T, hidden] projected onto the layer's K and V rows
 * (rows [q_size, q_size + 2 * kv_size) of its fused QKV weight), K normed (K-norm weight, eps) and
 * NeoX-rotated at positions[t], K and V written to the layer's pools at cache_loc[t] (negative:
 * skipped). The per-layer path runs one GEMM per layer; the stacked path one GEMM over
 * stacked_weight (every layer's KV rows concatenated, layer 0 K, layer 0 V, layer 1 K, ...) and
 * one epilogue for all layers. Both must give the same bytes when the GEMM sums in the contract's
 * order (KVC_GEMM_EXACT_ORDER); a library that cannot returns KVC_STATUS_UNSUPPORTED for it. A
 * model is eligible for the stacked path when no layer is quantized, every eps is equal, the bias
 * is on all layers or none, and head_dim, kv heads, weight dtype and the rotary table (the same
 * tensor) are equal. Since 1.3 the fused path (docs/contract.md §4.5): per (token, layer, kv
 * head), that head's K and V rows projected and the epilogue run in one kernel, no projection
 * scratch; eligible when every layer is unquantized with bf16 weights, x and the pools are bf16,
 * no layer has a bias, and head_dim, kv size, the rotary table (the same tensor) and eps are
 * equal. KVC_STACKED_PATH_AUTO takes the fused path when the model is eligible for it and the
 * library implements it, else the stacked path when eligible and stacked_weight is given, else
 * per layer; path_taken says which. */
typedef enum kvc_stacked_path {
  KVC_STACKED_PATH_AUTO = 0,
  KVC_STACKED_PATH_PER_LAYER = 1,
  KVC_STACKED_PATH_STACKED = 2, /* an ineligible model is rejected (157) */
  KVC_STACKED_PATH_FUSED =
      3 /* since 1.3: the fused path (declared by KVC_OP_STACKED_CTX_KV_FUSED); an ineligible model is rejected (157) */
} kvc_stacked_path;

typedef enum kvc_projection_gemm {
  KVC_GEMM_EXACT_ORDER = 0, /* each element the contract's sequential fma chain: bitwise comparable */
  KVC_GEMM_ANY_ORDER = 1    /* the library's fastest fp32-accumulating GEMM, compared under the ulp budget */
} kvc_projection_gemm;

typedef struct kvc_stacked_ctx_kv_layer {
  const DLTensor* qkv_weight;    /* [q_size + 2 * kv_size, hidden], bf16 or fp16 (the layer's dtype) */
  const DLTensor* qkv_bias;      /* [q_size + 2 * kv_size] in the layer's dtype, or NULL */
  const DLTensor* k_norm_weight; /* [head_dim] in the layer's dtype */
  const DLTensor* cos_sin_cache; /* [max_pos, head_dim] fp32: cosines, then sines */
  const DLTensor* k_pool;        /* [slots, num_kv_heads, head_dim] in x's dtype, stride(1) == head_dim */
  const DLTensor* v_pool;        /* the same */
  int64_t q_size;
  int64_t num_kv_heads;
  int64_t head_dim;
  float eps;
  int32_t quantized; /* nonzero: the layer's weight cannot be sliced; qkv_weight holds its values */
} kvc_stacked_ctx_kv_layer;

typedef struct kvc_stacked_ctx_kv_args {
  uint32_t struct_size;
  uint32_t layer_struct_size;             /* sizeof(kvc_stacked_ctx_kv_layer) as the caller knows it */
  const DLTensor* x;                      /* [T, hidden] bf16 or fp16: the storage dtype */
  const DLTensor* positions;              /* [T] int64 */
  const DLTensor* cache_loc;              /* [T] int64 */
  const kvc_stacked_ctx_kv_layer* layers; /* host array of num_layers entries */
  int32_t num_layers;                     /* 1..32 */
  int32_t path;                           /* kvc_stacked_path */
  int32_t gemm;                           /* kvc_projection_gemm */
  const DLTensor* stacked_weight;         /* [sum of 2 * kv_size, hidden] in the layers' dtype, or NULL */
  const DLTensor* stacked_bias;           /* [sum of 2 * kv_size] when the layers have biases, else NULL */
  const DLTensor* projection; /* optional output [T, sum of 2 * kv_size] in x's dtype: the stored GEMM result */
  int32_t* path_taken;        /* optional host output: the kvc_stacked_path that ran */
  /* Since 1.3 (read only when struct_size covers it): prefix-valid writes, NULL or [B] int64; with
   * it cache_loc is [B, S] int64 (T = B * S, row-major) and token (b, s) writes iff
   * s < commit_lens[b], then the cache_loc rule applies (docs/contract.md §4.5). */
  const DLTensor* commit_lens;
} kvc_stacked_ctx_kv_args;

KVC_ABI_EXPORT int kvc_stacked_ctx_kv(const kvc_stacked_ctx_kv_args* args, void* stream, char* error,
                                      size_t error_capacity);

/* The table a dlopen'ed library is read through: the suite looks these symbols up by name. */
#define KVC_ABI_SYMBOLS(X) \
  X(kvc_library_info_get)  \
  X(kvc_op_support_get)    \
  X(kvc_kv_only_insert)    \
  X(kvc_legacy_insert)     \
  X(kvc_kv_norm)

/* Entry points added in a minor version. A library may leave any of them out (a shim for an
 * upstream library that has no such op): the suite then reports that op's cases as skipped,
 * "the library does not export <symbol>". One X(symbol) line per entry point. */
#define KVC_ABI_OPTIONAL_SYMBOLS(X) \
  X(kvc_stacked_ctx_kv)             \
  X(kvc_store_rotated)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVC_KERNEL_ABI_H_ */
