// store_rotated_call.h: a store-op call (kvc_store_rotated, since 1.1) checked and described as
// the contract's StoreCase, the same way in every implementation of the ABI: a malformed call ->
// KVC_STATUS_BAD_ARGUMENT (args NULL, struct_size, a structural defect); the metadata ->
// kvc::validate_store_rotated at the strict level, metadata only -> the broken rule's code.
#pragma once

#include "kvc/abi/outcome.h"
#include "kvc/kernel_abi.h"
#include "kvc/store_case.h"

namespace kvc::abi {

// OK with *c the call's case, or the outcome that rejects the call (*c then unspecified).
Outcome check_store_rotated(const kvc_store_rotated_args* a, StoreCase* c);

}  // namespace kvc::abi
