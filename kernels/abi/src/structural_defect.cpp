// structural_defect.cpp: a call's defects that no validation rule names (see structural_defect.h).
#include "kvc/abi/structural_defect.h"

namespace kvc::abi {

std::string structural_defect(const DLTensor* t, const std::string& name) {
  if (t == nullptr) return name + " is NULL";
  if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged)
    return name + " is not on a CUDA device (DLPack device type " +
           std::to_string(static_cast<int>(t->device.device_type)) + ")";
  if (t->ndim < 0) return name + " has negative rank";
  if (t->ndim > 0 && t->shape == nullptr) return name + " has a NULL shape";
  // NULL data is a defect only for a tensor with elements; negative or overflowing sizes are left
  // to validation, which names them (kTensorMetaInvalid).
  std::int64_t numel = 1;
  for (int d = 0; d < t->ndim; ++d)
    if (t->shape[d] <= 0 || __builtin_mul_overflow(numel, t->shape[d], &numel)) return {};
  if (t->data == nullptr) return name + " has NULL data";
  return {};
}

std::string first_structural_defect(std::initializer_list<NamedTensor> tensors) {
  for (const NamedTensor& t : tensors) {
    if (t.tensor == nullptr && t.presence == Presence::kOptional) continue;
    if (std::string d = structural_defect(t.tensor, t.name); !d.empty()) return d;
  }
  return {};
}

}  // namespace kvc::abi
