// stacked_ctx_kv_rule_breakers.h: one way to break each rule of the stacked context-KV op.
//
// Applied to small_stacked_case() (valid: two layers with biases, four tokens, one skipped), each
// breaker changes exactly one thing (or asks for one path) and must make the op reject with its code at its level (and
// at kStrict); where validation returns a code from several places (the layer count, the head
// geometry, the pool rules for K and V), each place has its own row. The CPU suite runs them
// through the oracle, the GPU suite the metadata ones through the kernel ABI (abi_visible).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"
#include "kvc/status.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "kvc/validate.h"

namespace kvc::testkit {

struct StackedRuleBreaker {
  std::string name;  // "XFloat32": a test name
  ErrorCode code;
  ValidationLevel level;  // the lowest level that rejects it (values available)
  // The kernel wrapper sees it: a metadata rule it checks itself (the value rules 211-213 are
  // the device's to skip; 303 and 310 concern host buffers; a breaker a DLTensor cannot express
  // is host-only too).
  bool abi_visible;
  std::function<void(StackedCtxKvCase&, StackedCtxKvOutputs&)> apply;
  // The path the call asks for. A forced path on a model ineligible for it (E157) is a request,
  // not a case defect: its row leaves the case alone and asks for the path. Every runner of the
  // table passes it (the oracle's options, the device harness, the probe).
  StackedPathRequest path = StackedPathRequest::kAuto;
};

// The shape of small_stacked_case().
StackedCtxKvShape small_stacked_shape();
StackedCtxKvCase small_stacked_case();
// The same case laid out for a cache_loc policy (stacked_cache_loc_layout.h): under slot 0
// reserved its skipped token is at 0, not -1, which that policy rejects (E159).
StackedCtxKvCase small_stacked_case(CacheLocPolicy policy);

// The breakers under the contract's cache_loc policy.
const std::vector<StackedRuleBreaker>& stacked_rule_breakers();
// The breakers under `policy`, for small_stacked_case(policy): the table above, and under slot 0
// reserved one more, a negative cache_loc entry (E159, a value rule: not ABI-visible).
std::vector<StackedRuleBreaker> stacked_rule_breakers(CacheLocPolicy policy);
void PrintTo(const StackedRuleBreaker& b, std::ostream* os);

}  // namespace kvc::testkit
