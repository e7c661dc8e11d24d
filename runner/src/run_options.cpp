// run_options.cpp: option selection helpers (see run_options.h).
#include "run_options.h"

#include <algorithm>

namespace kvc::runner {

bool RunOptions::selects(AbiOp op) const { return ops.empty() || std::count(ops.begin(), ops.end(), op) > 0; }

bool RunOptions::selects(InsertOp op) const {
  if (op == InsertOp::kLegacy) return selects(AbiOp::kLegacy);
  return selects(AbiOp::kKvOnly) || selects(AbiOp::kKvOnlyKvNorm);
}

bool RunOptions::selects(RecordFormat f) const {
  return formats.empty() || std::count(formats.begin(), formats.end(), f) > 0;
}

bool RunOptions::selects_suite(const std::string& suite) const {
  return suites.empty() || std::count(suites.begin(), suites.end(), suite) > 0;
}

bool RunOptions::checks_op(AbiOp op) const {
  if (!selects(op)) return false;
  for (std::string_view suite : suites_calling(op))
    if (selects_suite(std::string(suite))) return true;
  return false;
}

std::string op_key(InsertOp op) { return op == InsertOp::kLegacy ? "legacy" : "kv_only"; }

}  // namespace kvc::runner
