// backend.h: one interface for everything that can run an InsertCase.
//
// Conformance is "run the same case on two backends and diff the outputs". The oracle is one
// backend among others (the reference), not a special path; the CUDA kernels and third-party
// plugins implement the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "kvc/status.h"
#include "kvc/store_case.h"

namespace kvc::testkit {

// Whether a backend can run a case, and if not why. An unsupported case is reported as skipped
// with the reason, never as passed.
struct Support {
  bool supported = true;
  std::string reason;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The oracle supports every case; a kernel library says what it implements.
  virtual Support supports(const InsertCase& c) const {
    (void)c;
    return {};
  }
  // Runs the case into caller-provided outputs (backing prefilled by the caller). A rejected case
  // returns its error and must leave the outputs untouched.
  virtual Status run(const InsertCase& c, InsertOutputs& out) = 0;
  // How the backend computes r = rsqrt(...) of an RMSNorm row: the legacy op's Q-norm
  // (q_norm = true) or the kv_norm fused in front of the KV-only insert (q_norm = false).
  // Correctly rounded unless declared otherwise; a backend that uses the hardware approximation
  // declares kApproximate and is then checked by approx_rsqrt.h (docs/contract.md §2, §6).
  virtual RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const {
    (void)op;
    (void)q_norm;
    return RsqrtMode::kCorrectlyRounded;
  }
  // The implementation profile the backend declares for a case (docs/contract.md §6): its bytes
  // are compared with the oracle's under it (policy_report.h). Default: vllm, with the rsqrt of
  // rsqrt_mode() for the case's norm.
  virtual kvc::Profile declared_profile(const InsertCase& c) const;

  // The store op (docs/contract.md §6.4): rows already normed and rotated -> packed records. A
  // backend without it says so in supports_store() (the default), and run_store() is never
  // called (the default throws std::logic_error). run_store() writes into the caller's backing;
  // a rejected case leaves it untouched.
  virtual Support supports_store(const StoreCase& c) const;
  virtual Status run_store(const StoreCase& c, std::vector<std::uint8_t>& backing);
  virtual kvc::Profile declared_store_profile(const StoreCase& c) const;
};

}  // namespace kvc::testkit
