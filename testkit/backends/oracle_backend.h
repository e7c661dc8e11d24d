// oracle_backend.h: the CPU reference as a Backend: the oracle under its options (profile,
// mutation), for the reference side of every comparison (the judge, compare/judge.h) and for
// planted-defect mutants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/oracle/options.h"
#include "testkit/backends/backend.h"

namespace kvc::testkit {

class OracleBackend final : public Backend {
 public:
  explicit OracleBackend(oracle::OracleOptions options = {}) : options_(options) {}
  std::string name() const override;
  Status run(const InsertCase& c, InsertOutputs& out) override;
  // The options' profile (the oracle's rsqrt is always correctly rounded).
  kvc::Profile declared_profile(const InsertCase& c) const override;
  Support supports_store(const StoreCase& c) const override;
  Status run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) override;
  kvc::Profile declared_store_profile(const StoreCase& c) const override;

  // Whole-case runs (run, run_store) of every OracleBackend in this process so far. The judge's
  // tests count its oracle runs with it (judge.h: one per judgment); an atomic add per run.
  static std::int64_t runs_so_far();

 private:
  oracle::OracleOptions options_;
};

}  // namespace kvc::testkit
