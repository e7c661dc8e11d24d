// forced_stacked_path.cpp: the oracle with the stacked path forced (see forced_stacked_path.h).
#include "testkit/backends/forced_stacked_path.h"

#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"

namespace kvc::testkit {

ForcedStackedRun run_oracle_forcing_stacked_path(const StackedCtxKvCase& c) {
  StackedCtxKvOutputs out = make_stacked_outputs(c);
  const StackedCtxKvOutputs before = out;
  oracle::StackedCtxKvOptions o;
  o.path = StackedPathRequest::kStacked;
  ForcedStackedRun r;
  r.status = oracle::stacked_ctx_kv(c, out, o);
  r.pools_unchanged = out.k_pools == before.k_pools && out.v_pools == before.v_pools;
  return r;
}

}  // namespace kvc::testkit
