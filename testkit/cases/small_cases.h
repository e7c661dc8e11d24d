// small_cases.h: a small valid case per op and format, the starting point of rule-breaking tests.
#pragma once

#include <cstdint>

#include "kvc/insert_case.h"

namespace kvc::testkit {

// 2 padded pages of 16 tokens, 6 kv rows, 4 slots (one -1), random values from `seed`; the legacy
// form has 2 live Q heads (padded to 8 for packed formats).
InsertCase small_valid_case(InsertOp op, RecordFormat format, std::uint64_t seed = 1);

}  // namespace kvc::testkit
