// insert_call.cpp: an insert call checked and described as an InsertCase (see insert_call.h).
#include "kvc/abi/insert_call.h"

#include <initializer_list>
#include <string>

#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/struct_size.h"
#include "kvc/abi/structural_defect.h"
#include "kvc/validate.h"

namespace kvc::abi {
namespace {

// The first structural defect among the tensors both insert ops take, in the order they are
// reported, then among `own` (the op's own optional tensors).
template <typename Args>
std::string kv_side_defect(const Args& a, std::initializer_list<NamedTensor> own) {
  if (std::string d = first_structural_defect({{a.kv, "kv"},
                                               {a.kv_cache, "kv_cache"},
                                               {a.slot_mapping, "slot_mapping"},
                                               {a.position_ids, "position_ids"},
                                               {a.cos_sin_cache, "cos_sin_cache"},
                                               {a.fp8_scale, "fp8_scale", Presence::kOptional}});
      !d.empty())
    return d;
  return first_structural_defect(own);
}

// A fresh case of op `op` holding the fields common to both insert ops. The dtype given for each
// tensor is the one its own rule rejects when the contract does not know the tensor's dtype.
template <typename Args>
void describe_kv_side(InsertOp op, const Args& a, InsertCase& c) {
  c = InsertCase{};
  c.op = op;
  c.kv = metadata_tensor(*a.kv, DType::kF32);                                            // -> kKvDtype
  c.slots = metadata_tensor(*a.slot_mapping, DType::kF32);                               // -> kSlotsInvalid
  c.positions = metadata_tensor(*a.position_ids, DType::kF32);                           // -> kPositionsInvalid
  c.cos_sin = metadata_tensor(*a.cos_sin_cache, DType::kI64);                            // -> kCosSinInvalid
  if (a.fp8_scale != nullptr) c.fp8_scale = metadata_tensor(*a.fp8_scale, DType::kI64);  // -> kFp8ScaleShape
  c.cache = cache_geometry(*a.kv_cache);                                                 // -> kCacheDtype
  c.block_size = a.block_size;
  c.kv_mxfp8 = a.kv_mxfp8 != 0;
}

Outcome validated(const InsertCase& c) {
  if (Status s = validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok()) return rejected(s);
  return {};
}

}  // namespace

Outcome check_kv_only_insert(const kvc_kv_only_insert_args* a, InsertCase* c) {
  if (std::string d = args_defect(a, KVC_ABI_END_OF(kvc_kv_only_insert_args, kv_mxfp8), "kvc_kv_only_insert_args");
      !d.empty())
    return bad_argument(d);
  if (std::string d = kv_side_defect(*a, {{a->kv_norm_weight, "kv_norm_weight", Presence::kOptional}}); !d.empty())
    return bad_argument(d);

  describe_kv_side(InsertOp::kKvOnly, *a, *c);
  if (a->kv_norm_weight != nullptr) c->kv_norm_weight = metadata_tensor(*a->kv_norm_weight, DType::kF32);
  c->kv_norm_eps = a->kv_norm_eps;
  return validated(*c);
}

Outcome check_legacy_insert(const kvc_legacy_insert_args* a, InsertCase* c) {
  if (std::string d = args_defect(a, KVC_ABI_END_OF(kvc_legacy_insert_args, q_interleaved), "kvc_legacy_insert_args");
      !d.empty())
    return bad_argument(d);
  if (std::string d = first_structural_defect({{a->q, "q"}, {a->q_out, "q_out"}}); !d.empty()) return bad_argument(d);
  if (std::string d = kv_side_defect(*a, {{a->q_scale_inv, "q_scale_inv", Presence::kOptional}}); !d.empty())
    return bad_argument(d);

  describe_kv_side(InsertOp::kLegacy, *a, *c);
  c->q = metadata_tensor(*a->q, DType::kF32);                                                     // -> kQDtype
  c->q_out = tensor_meta(*a->q_out, DType::kF32);                                                 // -> kQOutDtype
  if (a->q_scale_inv != nullptr) c->q_scale_inv = metadata_tensor(*a->q_scale_inv, DType::kI64);  // -> kQScaleShape
  c->eps = a->eps;
  c->apply_q_norm = a->apply_q_norm != 0;
  c->apply_q_rope = a->apply_q_rope != 0;
  c->q_interleaved = a->q_interleaved != 0;
  return validated(*c);
}

std::int32_t requested_grid(const kvc_legacy_insert_args& a) {
  return a.struct_size >= KVC_ABI_END_OF(kvc_legacy_insert_args, force_grid) ? a.force_grid : 0;
}

}  // namespace kvc::abi
