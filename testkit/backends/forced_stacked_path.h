// forced_stacked_path.h: the oracle asked for the stacked path on a stacked context-KV case.
//
// Forcing the stacked path on a model that is not eligible for it is a request the op refuses
// (E157) without writing; the eligibility scenarios and the request tests both check that, on the
// oracle, through this one run.
#pragma once

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/status.h"

namespace kvc::testkit {

struct ForcedStackedRun {
  Status status;                 // the oracle's answer
  bool pools_unchanged = false;  // every K and V pool byte as make_stacked_outputs wrote it
};

ForcedStackedRun run_oracle_forcing_stacked_path(const StackedCtxKvCase& c);

}  // namespace kvc::testkit
