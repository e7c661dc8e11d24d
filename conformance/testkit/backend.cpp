// backend.cpp: the oracle backend (see backend.h).
#include "kvc/testkit/backend.h"

#include <stdexcept>

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/store_rotated.h"

namespace kvc::testkit {

oracle::Profile Backend::declared_profile(const InsertCase& c) const {
  oracle::Profile p = oracle::vllm_profile();
  p.rsqrt = rsqrt_mode(c.op, c.op == InsertOp::kLegacy);
  return p;
}

Support Backend::supports_store(const StoreCase& c) const {
  (void)c;
  return {false, name() + " has no store op"};
}

Status Backend::run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) {
  (void)c;
  (void)backing;
  throw std::logic_error(name() + " has no store op: check supports_store() before run_store()");
}

oracle::Profile Backend::declared_store_profile(const StoreCase& c) const {
  (void)c;
  return oracle::vllm_profile();
}

std::string OracleBackend::name() const {
  std::string n = "oracle";
  if (options_.profile != oracle::vllm_profile()) n += "[profile:" + oracle::profile_name(options_.profile) + "]";
  if (options_.mutation != oracle::OracleMutation::kNone)
    n += "[mutant:" + std::string(oracle::mutation_name(options_.mutation)) + "]";
  return n;
}

Status OracleBackend::run(const InsertCase& c, InsertOutputs& out) {
  return c.op == InsertOp::kLegacy ? oracle::legacy_insert(c, out, options_) : oracle::kv_only_insert(c, out, options_);
}

oracle::Profile OracleBackend::declared_profile(const InsertCase& c) const {
  (void)c;
  oracle::Profile p = options_.profile;
  p.rsqrt = RsqrtMode::kCorrectlyRounded;
  return p;
}

Support OracleBackend::supports_store(const StoreCase& c) const {
  (void)c;
  return {};
}

Status OracleBackend::run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) {
  return oracle::store_rotated(c, backing, options_);
}

oracle::Profile OracleBackend::declared_store_profile(const StoreCase& c) const {
  (void)c;
  oracle::Profile p = options_.profile;
  p.rsqrt = RsqrtMode::kCorrectlyRounded;
  return p;
}

}  // namespace kvc::testkit
