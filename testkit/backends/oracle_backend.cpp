// oracle_backend.cpp: the oracle as a Backend (see oracle_backend.h).
#include "testkit/backends/oracle_backend.h"

#include <atomic>

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/store_rotated.h"

namespace kvc::testkit {
namespace {

std::atomic<std::int64_t> g_runs{0};

}  // namespace

std::string OracleBackend::name() const {
  std::string n = "oracle";
  if (options_.profile != kvc::vllm_profile()) n += "[profile:" + kvc::profile_name(options_.profile) + "]";
  if (options_.mutation != oracle::OracleMutation::kNone)
    n += "[mutant:" + std::string(oracle::mutation_name(options_.mutation)) + "]";
  return n;
}

Status OracleBackend::run(const InsertCase& c, InsertOutputs& out) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return c.op == InsertOp::kLegacy ? oracle::legacy_insert(c, out, options_) : oracle::kv_only_insert(c, out, options_);
}

kvc::Profile OracleBackend::declared_profile(const InsertCase& c) const {
  (void)c;
  kvc::Profile p = options_.profile;
  p.rsqrt = RsqrtMode::kCorrectlyRounded;
  return p;
}

Support OracleBackend::supports_store(const StoreCase& c) const {
  (void)c;
  return {};
}

Status OracleBackend::run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return oracle::store_rotated(c, backing, options_);
}

kvc::Profile OracleBackend::declared_store_profile(const StoreCase& c) const {
  (void)c;
  kvc::Profile p = options_.profile;
  p.rsqrt = RsqrtMode::kCorrectlyRounded;
  return p;
}

std::int64_t OracleBackend::runs_so_far() { return g_runs.load(std::memory_order_relaxed); }

}  // namespace kvc::testkit
