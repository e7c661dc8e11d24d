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
#define KVC_KERNEL_ABI_VERSION_MINOR 0
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
  KVC_OP_KV_NORM = 2         /* standalone kv_norm */
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

/* What a library says about one (op, format, kv dtype) combination. */
typedef struct kvc_op_support {
  uint32_t struct_size;
  int32_t supported;     /* 0: the suite reports every such case as skipped, with `reason` */
  int32_t q_norm_rsqrt;  /* kvc_rsqrt_mode of the legacy op's q-norm */
  int32_t kv_norm_rsqrt; /* kvc_rsqrt_mode of kv_norm (fused or standalone) */
  const char* reason;    /* static string when unsupported, else NULL */
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

/* The table a dlopen'ed library is read through: the suite looks these symbols up by name. */
#define KVC_ABI_SYMBOLS(X) \
  X(kvc_library_info_get)  \
  X(kvc_op_support_get)    \
  X(kvc_kv_only_insert)    \
  X(kvc_legacy_insert)     \
  X(kvc_kv_norm)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVC_KERNEL_ABI_H_ */
