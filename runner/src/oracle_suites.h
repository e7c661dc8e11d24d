// oracle_suites.h: the CPU conformance of the oracle, what `kvconform run` checks without a GPU.
//
// The oracle is the reference every kernel is compared with, so on a machine without a GPU the
// runner checks the oracle itself, against what does not come from it:
//   golden    the frozen fixtures (golden/), made by a second implementation of the contract
//             that shares no code with the oracle: backing and q_out byte for byte;
//   invalid   every validation rule broken alone (testkit rule breakers), for every op and
//             format it applies to: rejected with the rule's stable code, outputs untouched;
//   registry  the registry's scenarios (the kernel matrix up to kOracleRegistryMaxTokens unless
//             --max-tokens, and the upstream DSpark scenario in three rounds): accepted, bytes
//             written only inside the addressed records and in every one of them, the same bytes
//             on one thread as on many; legacy and KV-only caches equal in the DSpark rounds;
//   checker   the comparator and classifier that judge kernels: every planted defect
//             (testkit/planted_defects.h) is caught and named with its class.
// With --oracle-mutation the oracle under test is a deliberately broken one: the golden suite
// must then fail, and its classes name the mutation.
#pragma once

#include <string>

#include "run_options.h"

namespace kvc::runner {

// One of them (suite_plan.h: kOracleSuites), whatever --suites says; the run makes each in a
// process of its own (suite_children.h). Throws std::invalid_argument for another name.
void run_oracle_suite(const std::string& suite, const RunOptions& options, const RunSink& sink);

}  // namespace kvc::runner
