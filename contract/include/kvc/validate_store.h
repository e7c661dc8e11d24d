// validate_store.h: the validation rules of the store op (docs/contract.md §5, §6.4).
//
// The same two levels as the insert ops (validate.h), the same codes where a rule is the same
// (rows are the kv rules 101-104, block size 106-107, stride(2) 108, width 110, geometry 129-130,
// page stride 118 and 201, alignment 202, slot range and duplicates 203-204, coverage 301/303),
// and 131-135 for what only the store op has: int32 or int64 indices, exactly one per row, a
// uint8 cache, of rank 3 or 2, whose 2-D pages hold block_size records. Negative indices are
// valid and skip their row (docs/contract.md §3.1). The first violated rule wins; a rejected
// call writes nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/status.h"
#include "kvc/store_case.h"
#include "kvc/validate.h"

namespace kvc {

Status validate_store_rotated(const StoreCase& c, ValidationLevel level,
                              ValueAccess access = ValueAccess::kMetadataAndValues);

// The caller's cache backing covers every page and every record of the view (harness rule 301).
// Safe on an unvalidated case.
Status validate_store_backing(const StoreCase& c, const std::vector<std::uint8_t>& backing);

}  // namespace kvc
