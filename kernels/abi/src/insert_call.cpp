// insert_call.cpp: an insert call checked and described as an InsertCase (see insert_call.h).
#include "kvc/abi/insert_call.h"

#include <string>

#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/struct_size.h"
#include "kvc/abi/structural_defect.h"
#include "kvc/validate.h"

namespace kvc::abi {
namespace {

// The fields common to both insert ops. The dtype given for each tensor is the one its own rule
// rejects when the contract does not know the tensor's dtype.
void describe_kv_side(InsertCase& c, const DLTensor& kv, const DLTensor& cache, const DLTensor& slots,
                      const DLTensor& positions, const DLTensor& cos_sin, const DLTensor* fp8_scale,
                      std::int64_t block_size, bool kv_mxfp8) {
  c.kv = metadata_tensor(kv, DType::kF32);                                           // -> kKvDtype
  c.slots = metadata_tensor(slots, DType::kF32);                                     // -> kSlotsInvalid
  c.positions = metadata_tensor(positions, DType::kF32);                             // -> kPositionsInvalid
  c.cos_sin = metadata_tensor(cos_sin, DType::kI64);                                 // -> kCosSinInvalid
  if (fp8_scale != nullptr) c.fp8_scale = metadata_tensor(*fp8_scale, DType::kI64);  // -> kFp8ScaleShape
  c.cache = cache_geometry(cache);                                                   // -> kCacheDtype
  c.block_size = block_size;
  c.kv_mxfp8 = kv_mxfp8;
}

Outcome validated(const InsertCase& c) {
  if (Status s = validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok()) return rejected(s);
  return {};
}

}  // namespace

Outcome check_kv_only_insert(const kvc_kv_only_insert_args* a, InsertCase* c) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (std::string d = struct_size_defect("struct_size", a->struct_size,
                                         KVC_ABI_END_OF(kvc_kv_only_insert_args, kv_mxfp8), "kvc_kv_only_insert_args");
      !d.empty())
    return bad_argument(d);
  if (std::string d = first_structural_defect({{a->kv, "kv"},
                                               {a->kv_cache, "kv_cache"},
                                               {a->slot_mapping, "slot_mapping"},
                                               {a->position_ids, "position_ids"},
                                               {a->cos_sin_cache, "cos_sin_cache"},
                                               {a->fp8_scale, "fp8_scale", Presence::kOptional},
                                               {a->kv_norm_weight, "kv_norm_weight", Presence::kOptional}});
      !d.empty())
    return bad_argument(d);

  *c = InsertCase{};
  c->op = InsertOp::kKvOnly;
  describe_kv_side(*c, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
                   a->block_size, a->kv_mxfp8 != 0);
  if (a->kv_norm_weight != nullptr) c->kv_norm_weight = metadata_tensor(*a->kv_norm_weight, DType::kF32);
  c->kv_norm_eps = a->kv_norm_eps;
  return validated(*c);
}

Outcome check_legacy_insert(const kvc_legacy_insert_args* a, InsertCase* c) {
  if (a == nullptr) return bad_argument("args is NULL");
  if (std::string d =
          struct_size_defect("struct_size", a->struct_size, KVC_ABI_END_OF(kvc_legacy_insert_args, q_interleaved),
                             "kvc_legacy_insert_args");
      !d.empty())
    return bad_argument(d);
  if (std::string d = first_structural_defect({{a->q, "q"},
                                               {a->q_out, "q_out"},
                                               {a->kv, "kv"},
                                               {a->kv_cache, "kv_cache"},
                                               {a->slot_mapping, "slot_mapping"},
                                               {a->position_ids, "position_ids"},
                                               {a->cos_sin_cache, "cos_sin_cache"},
                                               {a->fp8_scale, "fp8_scale", Presence::kOptional},
                                               {a->q_scale_inv, "q_scale_inv", Presence::kOptional}});
      !d.empty())
    return bad_argument(d);

  *c = InsertCase{};
  c->op = InsertOp::kLegacy;
  describe_kv_side(*c, *a->kv, *a->kv_cache, *a->slot_mapping, *a->position_ids, *a->cos_sin_cache, a->fp8_scale,
                   a->block_size, a->kv_mxfp8 != 0);
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
