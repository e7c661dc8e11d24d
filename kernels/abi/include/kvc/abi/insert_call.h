// insert_call.h: a KV-only or legacy insert call checked up to the contract's metadata rules and
// described as the contract's InsertCase, the same way in every implementation of the ABI (our
// wrapper, the shims, the example plugin):
//   1. a malformed call -> KVC_STATUS_BAD_ARGUMENT: args NULL, struct_size too small for the
//      op's fields, a tensor with a structural defect (structural_defect.h);
//   2. the tensors' metadata as an InsertCase (a dtype the contract does not know becomes one its
//      argument's rule rejects with its own code);
//   3. kvc::validate_insert at the strict level, metadata only -> the broken rule's code.
// What an implementation requires beyond the contract (our kernels' element alignment) it checks
// after these.
#pragma once

#include <cstdint>

#include "kvc/abi/outcome.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"

namespace kvc::abi {

// OK with *c the call's case, or the outcome that rejects the call (*c then unspecified).
Outcome check_kv_only_insert(const kvc_kv_only_insert_args* a, InsertCase* c);
Outcome check_legacy_insert(const kvc_legacy_insert_args* a, InsertCase* c);

// The legacy call's force_grid (since 1.1), or 0, the library's own choice, for a caller whose
// struct_size does not cover it.
std::int32_t requested_grid(const kvc_legacy_insert_args& a);

}  // namespace kvc::abi
