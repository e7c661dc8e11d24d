// device_tensor.cpp: DLTensors over device memory (see device_tensor.h).
#include "testkit/device/device_tensor.h"

#include <utility>

#include "kvc/abi/dl_dtype.h"

namespace kvc::testkit {

DeviceTensor::DeviceTensor(void* data, const TensorMeta& meta, int device)
    : shape_(meta.sizes), strides_(meta.strides) {
  if (shape_.empty()) shape_.push_back(1), strides_.push_back(1);  // 0-d: valid pointers, ndim 0
  tensor_.data = data;
  tensor_.device = DLDevice{kDLCUDA, device + meta.device};
  tensor_.ndim = static_cast<std::int32_t>(meta.sizes.size());
  tensor_.dtype = abi::dl_dtype(meta.dtype);
  tensor_.byte_offset = static_cast<std::uint64_t>(meta.offset_bytes);
  point_into_storage();
}

DeviceTensor::DeviceTensor(const DeviceTensor& other)
    : tensor_(other.tensor_), shape_(other.shape_), strides_(other.strides_) {
  point_into_storage();
}

DeviceTensor& DeviceTensor::operator=(const DeviceTensor& other) {
  if (this != &other) {
    tensor_ = other.tensor_;
    shape_ = other.shape_;
    strides_ = other.strides_;
    point_into_storage();
  }
  return *this;
}

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : tensor_(other.tensor_), shape_(std::move(other.shape_)), strides_(std::move(other.strides_)) {
  point_into_storage();
}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    tensor_ = other.tensor_;
    shape_ = std::move(other.shape_);
    strides_ = std::move(other.strides_);
    point_into_storage();
  }
  return *this;
}

void DeviceTensor::point_into_storage() {
  tensor_.shape = shape_.empty() ? nullptr : shape_.data();
  tensor_.strides = strides_.empty() ? nullptr : strides_.data();
}

}  // namespace kvc::testkit
