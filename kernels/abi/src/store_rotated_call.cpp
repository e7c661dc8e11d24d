// store_rotated_call.cpp: a store-op call checked and described (see store_rotated_call.h).
#include "kvc/abi/store_rotated_call.h"

#include <string>

#include "kvc/abi/dlpack_metadata.h"
#include "kvc/abi/struct_size.h"
#include "kvc/abi/structural_defect.h"
#include "kvc/validate_store.h"

namespace kvc::abi {

Outcome check_store_rotated(const kvc_store_rotated_args* a, StoreCase* c) {
  if (std::string d = args_defect(a, KVC_ABI_END_OF(kvc_store_rotated_args, kv_mxfp8), "kvc_store_rotated_args");
      !d.empty())
    return bad_argument(d);
  if (std::string d = first_structural_defect({{a->rows, "rows"}, {a->kv_cache, "kv_cache"}, {a->indices, "indices"}});
      !d.empty())
    return bad_argument(d);

  *c = StoreCase{};
  c->rows = metadata_tensor(*a->rows, DType::kF32);        // unknown dtype -> kKvDtype
  c->indices = metadata_tensor(*a->indices, DType::kF32);  // -> kStoreIndicesInvalid
  c->cache = tensor_meta(*a->kv_cache, DType::kF32);       // -> kStoreCacheNotPacked
  c->block_size = a->block_size;
  c->kv_mxfp8 = a->kv_mxfp8 != 0;
  if (Status s = validate_store_rotated(*c, ValidationLevel::kStrict, ValueAccess::kMetadataOnly); !s.ok())
    return rejected(s);
  return {};
}

}  // namespace kvc::abi
