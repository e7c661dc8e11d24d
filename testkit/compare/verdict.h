// verdict.h: what the judge says of one library call: judge.h for the insert and store ops,
// stacked_ctx_kv_judge.h for the stacked projection. One type, so that a GPU suite, the runner's
// kernel suites and the fuzz properties read a judgment the same way: its kind, how many of the
// library's bytes were compared, the expected and actual bytes, the reports behind it, the text.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "kvc/status.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/compare/mismatch_classes.h"
#include "testkit/compare/policy_report.h"

namespace kvc::testkit {

enum class VerdictKind : std::uint8_t {
  kMatch = 0,              // accepted as the oracle did; every compared byte is the oracle's under the
                           // declared profile (norm rows: reproduced within a declared approximate rsqrt)
  kRejectedAlike = 1,      // rejected with the oracle's code, nothing written
  kMismatch = 2,           // accepted as the oracle did; bytes differ
  kStatusDiffers = 3,      // the library's status is not the oracle's: no byte compared
  kWroteWhenRejected = 4,  // rejected with the oracle's code, but the outputs changed
  kWrongPath = 5,          // the stacked op took another path than the call must take
};
inline constexpr std::array<VerdictKind, 6> kAllVerdictKinds = {
    VerdictKind::kMatch,         VerdictKind::kRejectedAlike,     VerdictKind::kMismatch,
    VerdictKind::kStatusDiffers, VerdictKind::kWroteWhenRejected, VerdictKind::kWrongPath};

// "match", "rejected alike", "mismatch", "status differs", "wrote when rejected", "wrong path".
std::string_view verdict_kind_name(VerdictKind k);

struct Verdict {
  VerdictKind kind = VerdictKind::kMatch;
  kvc::Profile profile;  // judged under: the one the library declares (rsqrt: its norm rows' mode)
  Status oracle_status = Status::Ok();
  Status library_status = Status::Ok();
  // Bytes of the library's outputs compared with the oracle's (the whole backing and q_out, or
  // for a rejection every byte that must be unchanged); 0 when the statuses differ.
  std::int64_t compared_bytes = 0;
  // The oracle's outputs under `profile`, written over the same initial bytes, and the library's.
  // The store op fills `cache` only; the stacked judge leaves both empty (its report carries the
  // pools' differences).
  InsertOutputs expected;
  InsertOutputs actual;
  PolicyReport policy;             // the cache bytes under the profile (both accepted, when computed)
  ApproxRsqrtResult rsqrt;         // the norm rows, under a declared approximate rsqrt
  MismatchClassification classes;  // what explains each differing cache record (an insert kMismatch)
  std::string report;              // everything above in words: where, expected vs actual, the policies

  bool passed() const { return kind == VerdictKind::kMatch || kind == VerdictKind::kRejectedAlike; }
};

}  // namespace kvc::testkit
