// judge.h: the one judge of a library's insert or store call against the oracle.
//
// Given a case, the profile the library declares for it (rsqrt included: Profile::rsqrt is the
// mode of the case's norm rows, the legacy op's Q norm or the fused kv_norm), and what the library
// did (its Status, and its outputs written over `initial`), the judge runs the oracle once, under
// that profile, over the same initial bytes, and returns the Verdict (verdict.h):
//   - the statuses differ: kStatusDiffers, no byte compared;
//   - both rejected the case with one code: kRejectedAlike when every output byte is as it was,
//     else kWroteWhenRejected;
//   - both accepted it: the whole backing through the profile checker (policy_report.h: a
//     difference names the policies the bytes follow, and address errors apart, never excused)
//     and q_out byte for byte; under a declared approximate rsqrt the norm rows row by row
//     (approx_rsqrt.h) and every other byte exactly. kMatch or kMismatch; the differing cache
//     records of an insert are classified (mismatch_classes.h).
// Every GPU suite (device/gpu_test_support.h), the runner's kernel suites and the fuzz properties
// judge through it, so ctest, `kvconform run` and `kvconform-fuzz` cannot disagree about a
// library: one that declares `sglang-store` and writes SGLang's bytes passes all three, one that
// declares `vllm` with the same bytes fails all three, with the policies named.
//
// Cost: one oracle run of the case per judgment (OracleBackend::runs_so_far() counts it); on a
// difference, the checker's and the classifier's re-encodings of the differing rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "kvc/status.h"
#include "kvc/store_case.h"
#include "kvc/validate.h"
#include "testkit/backends/backend.h"
#include "testkit/compare/verdict.h"

namespace kvc::testkit {

// Whether a case's q output is judged. The contract leaves it unspecified for a legacy case with
// rows the device skips (a position outside the cos/sin table, gpu_invalid_input_test): the
// library's q_out then stands in for the oracle's, and none of its bytes counts as compared.
enum class QOutJudgment : std::uint8_t { kCompared = 0, kUnspecified = 1 };

struct JudgeOptions {
  std::string library_name = "the library";  // the actual side, in the report
  // The oracle's validation level: kStrict, or kContract for a case whose skipped rows carry
  // positions no row reads (the strict level rejects any position out of range).
  ValidationLevel oracle_level = ValidationLevel::kStrict;
  QOutJudgment q_out = QOutJudgment::kCompared;
};

// The library's call of insert case `c`: `library_status`, and `actual` its outputs written over
// `initial` (the caller's prefill; without one, testkit::make_outputs(c), the canary).
Verdict judge_insert(const InsertCase& c, const kvc::Profile& declared, const Status& library_status,
                     InsertOutputs initial, InsertOutputs actual, const JudgeOptions& options = {});
Verdict judge_insert(const InsertCase& c, const kvc::Profile& declared, const Status& library_status,
                     InsertOutputs actual, const JudgeOptions& options = {});

// The same for the store op: `actual` is the backing (initial: make_store_backing(c)).
Verdict judge_store(const StoreCase& c, const kvc::Profile& declared, const Status& library_status,
                    std::vector<std::uint8_t> initial, std::vector<std::uint8_t> actual,
                    const JudgeOptions& options = {});
Verdict judge_store(const StoreCase& c, const kvc::Profile& declared, const Status& library_status,
                    std::vector<std::uint8_t> actual, const JudgeOptions& options = {});

// Runs `backend` on the case over the canary and judges the call under the profile the backend
// declares for it (declared_profile, declared_store_profile), named by backend.name(). What a
// backend throws propagates (the device backend's damage: the caller turns it into a verdict).
Verdict run_and_judge_insert(Backend& backend, const InsertCase& c);
Verdict run_and_judge_store(Backend& backend, const StoreCase& c);

}  // namespace kvc::testkit
