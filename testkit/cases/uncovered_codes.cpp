// uncovered_codes.cpp: the error codes no negative test breaks (see uncovered_codes.h).
#include "testkit/cases/uncovered_codes.h"

#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"
#include "testkit/cases/store_cases.h"

namespace kvc::testkit {

std::vector<ErrorCode> codes_without_a_negative_test(std::set<ErrorCode> covered) {
  for (const StoreRuleBreaker& b : store_rule_breakers()) covered.insert(b.code);
  for (const StackedRuleBreaker& b : stacked_rule_breakers()) covered.insert(b.code);
  covered.insert(ErrorCode::kStackedPathIneligible);
  covered.insert(ErrorCode::kStackedParamsMismatch);
  // A policy's value rule: broken in conformance/cpu/stacked_ctx_kv_policies_test.cpp.
  covered.insert(ErrorCode::kStackedNegativeCacheLoc);
  std::vector<ErrorCode> uncovered;
  for (ErrorCode code : kAllErrorCodes)
    if (code != ErrorCode::kOk && covered.count(code) == 0) uncovered.push_back(code);
  return uncovered;
}

}  // namespace kvc::testkit
