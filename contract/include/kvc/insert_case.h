// insert_case.h: InsertCase, the one description of an insertion problem.
//
// Every part speaks this type: the case registry and the fuzz generators produce it, case files
// serialize it, the oracle and every backend consume it. It is plain data: host tensors with the
// metadata the validation rules look at (dtype, shape, strides, device, base alignment), the cache
// geometry (the cache bytes themselves live in the caller's backing buffer), and the op's flags.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "kvc/checked_math.h"
#include "kvc/contract.h"

namespace kvc {

// Shape and placement of one tensor argument. Strides are in elements. Buffers are modelled as
// 16-byte aligned allocations with element 0 at `offset_bytes`, so misalignment is expressible.
//
// The metadata may come from a case file or a hostile caller: nothing here assumes it is sane.
// well_formed() is the precondition the validators establish first (docs/contract.md §5); the
// extent helpers are checked (no result on int64 overflow) and the plain numel()/span_bytes()
// saturate at INT64_MAX instead of overflowing, so even an unvalidated call is never undefined.
struct TensorMeta {
  DType dtype = DType::kU8;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t offset_bytes = 0;
  int device = 0;

  int rank() const { return static_cast<int>(sizes.size()); }
  std::int64_t size(int d) const { return sizes[static_cast<std::size_t>(d)]; }
  std::int64_t stride(int d) const { return strides[static_cast<std::size_t>(d)]; }

  CheckedI64 checked_numel() const {
    for (std::int64_t s : sizes)
      if (s == 0) return std::int64_t{0};  // empty whatever the other sizes are
    CheckedI64 n = std::int64_t{1};
    for (std::int64_t s : sizes) n = checked_mul(n, CheckedI64{s});
    return n;
  }
  // Bytes from the start of the buffer to one past the last element (offset_bytes when empty);
  // nothing for mismatched lengths, a negative size or an overflow.
  CheckedI64 checked_span_bytes() const {
    if (sizes.size() != strides.size()) return std::nullopt;
    for (std::int64_t s : sizes)
      if (s < 0) return std::nullopt;  // no extent; also keeps size - 1 below from overflowing
    const CheckedI64 n = checked_numel();
    if (!n) return std::nullopt;
    if (*n == 0) return offset_bytes;
    CheckedI64 last = std::int64_t{0};
    for (int d = 0; d < rank(); ++d) last = checked_mul_add(size(d) - 1, stride(d), last);
    return checked_mul_add(checked_add(last, std::int64_t{1}), std::int64_t{dtype_size(dtype)}, offset_bytes);
  }
  // Sizes and strides of one length, no negative size, stride or offset, a known dtype, and an
  // element count and byte extent that fit in int64. torch never produces anything else.
  bool well_formed() const {
    if (sizes.size() != strides.size() || offset_bytes < 0 || dtype_size(dtype) == 0) return false;
    for (std::size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] < 0 || strides[d] < 0) return false;
    return checked_span_bytes().has_value();
  }

  std::int64_t numel() const { return checked_numel().value_or(INT64_MAX); }
  std::int64_t span_bytes() const { return checked_span_bytes().value_or(INT64_MAX); }
  // Row-major with no gaps (dims of size 1 may have any stride). False for mismatched lengths.
  bool contiguous() const {
    if (sizes.size() != strides.size()) return false;
    CheckedI64 expected = std::int64_t{1};
    for (int d = rank() - 1; d >= 0; --d) {
      if (size(d) != 1 && (!expected || stride(d) != *expected)) return false;
      expected = checked_mul(expected, CheckedI64{size(d)});
    }
    return true;
  }
};

inline std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> strides(sizes.size(), 1);
  for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d)
    strides[static_cast<std::size_t>(d)] =
        strides[static_cast<std::size_t>(d) + 1] * sizes[static_cast<std::size_t>(d) + 1];
  return strides;
}

// Row-major metadata of the given shape (no bytes: for tensors made elsewhere, on the device).
inline TensorMeta contiguous_meta(DType dtype, std::vector<std::int64_t> sizes) {
  TensorMeta m;
  m.dtype = dtype;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  return m;
}

// A tensor argument with its bytes. `present == false` models an absent optional (None).
struct HostTensor {
  TensorMeta meta;
  std::vector<std::uint8_t> bytes;
  bool present = false;

  // Element at a linear element index (already multiplied out with the strides).
  template <typename T>
  T load(std::int64_t element_index) const {
    T v;
    std::memcpy(&v, bytes.data() + meta.offset_bytes + element_index * static_cast<std::int64_t>(sizeof(T)), sizeof v);
    return v;
  }
  template <typename T>
  void store(std::int64_t element_index, T v) {
    std::memcpy(bytes.data() + meta.offset_bytes + element_index * static_cast<std::int64_t>(sizeof(T)), &v, sizeof v);
  }
};

// A contiguous, zero-filled tensor of the given shape.
inline HostTensor make_tensor(DType dtype, std::vector<std::int64_t> sizes) {
  HostTensor t;
  t.meta.dtype = dtype;
  t.meta.strides = contiguous_strides(sizes);
  t.meta.sizes = std::move(sizes);
  t.bytes.assign(static_cast<std::size_t>(t.meta.span_bytes()), 0);
  t.present = true;
  return t;
}

template <typename T>
HostTensor make_tensor_from(DType dtype, const std::vector<T>& values, std::vector<std::int64_t> sizes) {
  HostTensor t = make_tensor(dtype, std::move(sizes));
  // An empty vector's data() may be null, and memcpy from null is undefined even for 0 bytes.
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(T));
  return t;
}

// The paged cache tensor: a 3-D view [num_blocks, block_size, width] into the caller's backing.
// Packed formats address a page as bytes (stride0 is all they use); full caches use stride0 and
// stride1. All strides are in elements of `dtype`, as torch reports them.
struct CacheGeometry {
  DType dtype = DType::kU8;
  int rank = 3;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;  // size(1)
  std::int64_t width = 0;       // size(2)
  std::int64_t stride0 = 0, stride1 = 0, stride2 = 1;
  std::int64_t offset_bytes = 0;  // where element [0,0,0] sits in the backing
  int device = 0;

  std::int64_t element_bytes() const { return dtype_size(dtype); }
  CheckedI64 checked_page_stride_bytes() const { return checked_mul(stride0, element_bytes()); }
  CheckedI64 checked_token_stride_bytes() const { return checked_mul(stride1, element_bytes()); }
  CheckedI64 checked_backing_bytes() const {
    return checked_mul_add(num_blocks, checked_page_stride_bytes(), offset_bytes);
  }
  // Plain forms for validated geometry (validate.h rejects one whose extents overflow); they
  // saturate at INT64_MAX rather than overflow if called on anything else.
  std::int64_t page_stride_bytes() const { return checked_page_stride_bytes().value_or(INT64_MAX); }
  std::int64_t token_stride_bytes() const { return checked_token_stride_bytes().value_or(INT64_MAX); }
  // Size of a backing that holds every page, padding included.
  std::int64_t backing_bytes() const { return checked_backing_bytes().value_or(INT64_MAX); }
};

enum class InsertOp : std::uint8_t {
  kKvOnly = 0,  // fused_deepseek_v4_kv_rope_insert (optionally with kv_norm fused in front)
  kLegacy = 1,  // the Q+KV op; full-cache formats use the full-cache Q paths
};

struct InsertCase {
  InsertOp op = InsertOp::kKvOnly;

  HostTensor kv;         // [N, 512] bf16 (legacy: or f16)
  HostTensor slots;      // [M <= N] int64; rows >= M are never read
  HostTensor positions;  // [N] int64
  HostTensor cos_sin;    // [max_pos, 64] fp32
  HostTensor fp8_scale;  // [1] fp32, fp8_512 only

  CacheGeometry cache;
  std::int64_t block_size = 0;  // the op's cache_block_size argument
  bool kv_mxfp8 = false;        // uint8 cache: packed528 when set, packed584 otherwise

  // Legacy op. Packed formats: q_out is [N, Hp, 512] of q's dtype, or 1-D [0] for Hp = 0.
  // fp8_512: q_out is q_fp8 [N, H, 512] e4m3. bf16_512: q is updated in place, so q_out has
  // q's shape and every element is rewritten.
  HostTensor q;
  TensorMeta q_out;
  HostTensor q_scale_inv;  // [1] fp32, fp8_512 legacy only
  float eps = 1e-6f;
  bool apply_q_norm = true;
  bool apply_q_rope = true;    // packed legacy only; the full-cache Q paths always rotate
  bool q_interleaved = false;  // packed legacy only

  // kv_norm fused in front of the KV-only insert (docs/contract.md §4): present weight enables it.
  HostTensor kv_norm_weight;  // [512] bf16
  float kv_norm_eps = 1e-6f;

  std::int64_t num_rows() const { return kv.meta.rank() >= 1 ? kv.meta.size(0) : 0; }
  std::int64_t num_inserted() const { return slots.meta.rank() >= 1 ? slots.meta.size(0) : 0; }
  // Hp of the packed legacy op: q_out's head count, 0 for the 1-D empty q_out.
  std::int64_t padded_heads() const { return q_out.rank() == 3 ? q_out.size(1) : 0; }
};

// The format a cache dtype and the kv_mxfp8 flag select; nothing for a dtype no format uses.
inline std::optional<RecordFormat> format_of(DType cache_dtype, bool kv_mxfp8) {
  switch (cache_dtype) {
    case DType::kU8: return kv_mxfp8 ? RecordFormat::kPacked528 : RecordFormat::kPacked584;
    case DType::kE4M3: return RecordFormat::kFp8_512;
    case DType::kBF16: return RecordFormat::kBf16_512;
    default: return std::nullopt;
  }
}
inline std::optional<RecordFormat> format_of(const InsertCase& c) { return format_of(c.cache.dtype, c.kv_mxfp8); }

// What an op writes: the cache backing (prefilled by the caller, typically with a canary) and the
// Q output tensor's bytes (sized q_out.span_bytes()).
struct InsertOutputs {
  std::vector<std::uint8_t> cache;
  std::vector<std::uint8_t> q_out;
};

}  // namespace kvc
