// device_tensor.h: a DLTensor over device memory, described by a TensorMeta.
//
// What every caller of the kernel ABI hands over for a tensor argument: kDLCUDA on the device
// (the caller's device plus meta.device, so a case can name another one), strides in elements,
// meta.offset_bytes kept as byte_offset so that a misaligned base reaches the kernel as such. The
// DLTensor's shape and strides live in the object; moving it keeps dl() valid.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <vector>

#include "kvc/insert_case.h"

namespace kvc::testkit {

class DeviceTensor {
 public:
  DeviceTensor() = default;
  // `data` is the start of the memory (element 0 at meta.offset_bytes past it); `device` the CUDA
  // device index meta.device counts from. The metadata must be expressible (abi_args.h's
  // meta_inexpressible() is empty): sizes and strides of one length, a non-negative offset.
  DeviceTensor(void* data, const TensorMeta& meta, int device);
  DeviceTensor(const DeviceTensor& other);
  DeviceTensor& operator=(const DeviceTensor& other);
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  ~DeviceTensor() = default;

  const DLTensor* dl() const { return &tensor_; }

 private:
  void point_into_storage();

  DLTensor tensor_{};
  // A 0-d tensor keeps one element in each, so that shape and strides are valid pointers.
  std::vector<std::int64_t> shape_, strides_;
};

}  // namespace kvc::testkit
