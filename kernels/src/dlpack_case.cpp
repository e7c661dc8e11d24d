// dlpack_case.cpp: DLPack tensors -> InsertCase metadata (see dlpack_case.h).
#include "dlpack_case.h"

#include <cstddef>

#include "kvc/kernel_abi.h"

namespace kvc::kernels::abi {

std::optional<DType> dtype_of(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == kDLBfloat && t.bits == 16) return DType::kBF16;
  if (t.code == kDLFloat && t.bits == 16) return DType::kF16;
  if (t.code == kDLFloat && t.bits == 32) return DType::kF32;
  if (t.code == kDLInt && t.bits == 64) return DType::kI64;
  if (t.code == kDLInt && t.bits == 32) return DType::kI32;
  if (t.code == kDLUInt && t.bits == 8) return DType::kU8;
  if (t.code == KVC_DL_FLOAT8_E4M3FN && t.bits == 8) return DType::kE4M3;
  return std::nullopt;
}

void* first_element(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }

std::string structural_defect(const DLTensor* t, const char* name) {
  const std::string n(name);
  if (t == nullptr) return n + " is NULL";
  if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged)
    return n + " is not on a CUDA device (DLPack device type " +
           std::to_string(static_cast<int>(t->device.device_type)) + ")";
  if (t->ndim < 0) return n + " has negative rank";
  if (t->ndim > 0 && t->shape == nullptr) return n + " has a NULL shape";
  // NULL data is a defect only for a tensor with elements; negative or overflowing sizes are left
  // to validation, which names them (kTensorMetaInvalid).
  std::int64_t numel = 1;
  for (int d = 0; d < t->ndim; ++d)
    if (t->shape[d] <= 0 || __builtin_mul_overflow(numel, t->shape[d], &numel)) return {};
  if (t->data == nullptr) return n + " has NULL data";
  return {};
}

TensorMeta tensor_meta(const DLTensor& t, DType unknown_dtype) {
  TensorMeta m;
  m.dtype = dtype_of(t.dtype).value_or(unknown_dtype);
  m.sizes.assign(t.shape, t.shape + t.ndim);
  m.strides =
      t.strides != nullptr ? std::vector<std::int64_t>(t.strides, t.strides + t.ndim) : contiguous_strides(m.sizes);
  // The alignment rules look at offset_bytes modulo the alignment unit: the address is what counts.
  m.offset_bytes = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(first_element(t)) % kAlignment);
  m.device = t.device.device_id;
  return m;
}

HostTensor metadata_tensor(const DLTensor& t, DType unknown_dtype) {
  HostTensor h;
  h.meta = tensor_meta(t, unknown_dtype);
  h.present = true;
  return h;
}

CacheGeometry cache_geometry(const DLTensor& t) {
  // A dtype no format uses: validation answers kCacheDtype.
  const TensorMeta m = tensor_meta(t, DType::kF32);
  CacheGeometry g;
  g.dtype = m.dtype;
  g.rank = m.rank();
  g.num_blocks = m.rank() > 0 ? m.size(0) : 0;
  g.block_size = m.rank() > 1 ? m.size(1) : 0;
  g.width = m.rank() > 2 ? m.size(2) : 0;
  g.stride0 = m.rank() > 0 ? m.stride(0) : 0;
  g.stride1 = m.rank() > 1 ? m.stride(1) : 0;
  g.stride2 = m.rank() > 2 ? m.stride(2) : 1;
  g.offset_bytes = m.offset_bytes;
  g.device = m.device;
  return g;
}

std::string element_misalignment(const DLTensor& t, int element_bytes, const char* name) {
  const auto address = reinterpret_cast<std::uintptr_t>(first_element(t));
  if (address % static_cast<std::uintptr_t>(element_bytes) == 0) return {};
  return std::string(name) + " is not aligned to its " + std::to_string(element_bytes) + "-byte elements";
}

}  // namespace kvc::kernels::abi
