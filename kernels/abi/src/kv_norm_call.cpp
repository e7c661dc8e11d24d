// kv_norm_call.cpp: a kv_norm call checked and described (see kv_norm_call.h).
#include "kvc/abi/kv_norm_call.h"

#include <string>

#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/struct_size.h"
#include "kvc/abi/structural_defect.h"
#include "kvc/validate.h"

namespace kvc::abi {

Outcome check_kv_norm(const kvc_kv_norm_args* a, KvNormCall* call) {
  if (std::string d = args_defect(a, KVC_ABI_END_OF(kvc_kv_norm_args, eps), "kvc_kv_norm_args"); !d.empty())
    return bad_argument(d);
  if (std::string d = first_structural_defect({{a->kv, "kv"}, {a->weight, "weight"}, {a->out, "out"}}); !d.empty())
    return bad_argument(d);
  call->kv = metadata_tensor(*a->kv, DType::kF32);
  call->weight = metadata_tensor(*a->weight, DType::kF32);
  if (Status s = validate_kv_norm(call->kv, call->weight, ValueAccess::kMetadataOnly); !s.ok()) return rejected(s);
  call->out = tensor_meta(*a->out, DType::kF32);
  const TensorMeta& out = call->out;
  if (!out.well_formed()) return rejected(Error(ErrorCode::kTensorMetaInvalid, "kv_norm out"));
  if (out.dtype != DType::kBF16) return rejected(Error(ErrorCode::kKvDtype, "kv_norm out must be bf16"));
  if (out.sizes != call->kv.meta.sizes) return rejected(Error(ErrorCode::kKvShape, "kv_norm out must have kv's shape"));
  if (!out.contiguous()) return rejected(Error(ErrorCode::kKvNotContiguous, "kv_norm out must be contiguous"));
  if (out.device != call->kv.meta.device)
    return rejected(Error(ErrorCode::kDeviceMismatch, "kv_norm out on device " + std::to_string(out.device)));
  return {};
}

}  // namespace kvc::abi
