// rule_breakers.h: one way to break each validation rule, applied to an otherwise valid case.
//
// The invalid-input matrix and the invalid-problem fuzz generator both draw from this table, so
// every rule of docs/contract.md §5 is broken the same way everywhere and adding a rule means
// adding one row. There is a breaker per validation site, not only per error code: where
// contract/src/validate.cpp returns the same code from several places (kv missing or of the
// wrong shape, three device checks, two kv dtype checks, two kv_norm weight checks, page and
// token strides), each place has its own row. A breaker changes exactly one thing; applied to a
// valid case it must make the op reject with `code` at `level` (and at kStrict, since strict
// includes contract).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/validate.h"
#include "kvc/status.h"

namespace kvc::testkit {

struct RuleBreaker {
  std::string name;  // "Fp8CacheWithoutScale": a test name
  ErrorCode code;
  ValidationLevel level;  // the lowest level that rejects it
  // Whether the breaker applies to a case of this op and format (e.g. Hp rules need the packed
  // legacy op, scale rules the fp8 cache).
  std::function<bool(InsertOp, RecordFormat)> applies;
  // Breaks the rule. May also shrink the outputs (harness rules). Returns false when this case
  // offers nothing to break (no live slot to move out of range, one row that cannot be made
  // non-contiguous, ...): the case is then left valid.
  std::function<bool(InsertCase&, InsertOutputs&)> apply;
};

const std::vector<RuleBreaker>& rule_breakers();

// One cell of the invalid-input matrix: a breaker applied to a base case of one op and format.
// The CPU suite (oracle) and the GPU suite (through the kernel ABI) instantiate the same cells.
struct RuleMatrixEntry {
  const RuleBreaker* breaker;
  InsertOp op;
  RecordFormat format;
};

// Every (breaker, op, format) the breaker applies to, in table order.
std::vector<RuleMatrixEntry> rule_matrix();
// "Fp8CacheWithoutScale_KvOnly_Fp8_512": the test name of a cell.
std::string rule_matrix_name(const RuleMatrixEntry& e);
// GoogleTest prints a parameter through this (found by argument-dependent lookup).
void PrintTo(const RuleMatrixEntry& e, std::ostream* os);

}  // namespace kvc::testkit
