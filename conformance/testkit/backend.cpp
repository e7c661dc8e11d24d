// backend.cpp: the oracle backend (see backend.h).
#include "kvc/testkit/backend.h"

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/legacy_insert.h"

namespace kvc::testkit {

std::string OracleBackend::name() const {
  std::string n = "oracle";
  if (options_.mutation != oracle::OracleMutation::kNone)
    n += "[mutant:" + std::string(oracle::mutation_name(options_.mutation)) + "]";
  return n;
}

Status OracleBackend::run(const InsertCase& c, InsertOutputs& out) {
  return c.op == InsertOp::kLegacy ? oracle::legacy_insert(c, out, options_) : oracle::kv_only_insert(c, out, options_);
}

}  // namespace kvc::testkit
