// oracle_backend.h: the CPU reference as a Backend: the oracle under its options (profile,
// mutation), for the reference side of every comparison and for planted-defect mutants.
#pragma once

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

 private:
  oracle::OracleOptions options_;
};

}  // namespace kvc::testkit
