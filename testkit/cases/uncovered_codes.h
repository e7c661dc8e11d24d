// uncovered_codes.h: the error codes no negative test breaks, for the suites' table-coverage tests.
//
// The insert suites cover their codes with the insert rule breakers; the store op's codes
// (131-135) are broken on store cases (store_rotated_test, CPU and GPU) and the stacked op's on
// stacked cases (stacked_ctx_kv_validate_test, gpu stacked_ctx_kv_test), which also send the two
// stacked requests E157 and E158. A code that none of them reaches has no negative test.
#pragma once

#include <set>
#include <vector>

#include "kvc/status.h"

namespace kvc::testkit {

// Every code but kOk that neither `covered` (the insert suite's own) nor the store and stacked
// tables and requests reach, in kAllErrorCodes order.
std::vector<ErrorCode> codes_without_a_negative_test(std::set<ErrorCode> covered);

}  // namespace kvc::testkit
