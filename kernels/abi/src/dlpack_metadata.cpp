// dlpack_metadata.cpp: DLPack tensors -> the contract's metadata (see dlpack_metadata.h).
#include "kvc/abi/dlpack_metadata.h"

#include <cstdint>
#include <vector>

#include "kvc/abi/dl_dtype.h"

namespace kvc::abi {

void* first_element(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }

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

}  // namespace kvc::abi
