// stacked_ctx_kv_checks.cpp: see stacked_ctx_kv_checks.h.
#include "testkit/device/stacked_ctx_kv_checks.h"

#include "kvc/stacked_fused_eligibility.h"
#include "testkit/cases/stacked_cache_loc_layout.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"

namespace kvc::testkit {

const char* stacked_check_suffix(StackedCheck k) {
  switch (k) {
    case StackedCheck::kExactOrder: return "_ExactOrder";
    case StackedCheck::kAnyOrder: return "_AnyOrder";
    case StackedCheck::kAutoFallsBack: return "_AutoFallsBack";
  }
  return "";
}

StackedRun run_stacked(StackedCtxKvDevice& device, const StackedCtxKvCase& c, StackedDeviceOptions options,
                       const std::string& name) {
  StackedRun r;
  r.name = name;
  r.pools = make_stacked_outputs(c);
  options.read_projection = true;
  StackedDeviceRun run;
  try {
    r.status = device.run(c, r.pools, options, &run);
  } catch (const KernelCallError& e) {
    if (run.checks.abi_status != KVC_STATUS_UNSUPPORTED) throw;
    throw StackedGemmUnsupported(std::string("the library does not implement the ") + gemm_name(options.gemm) +
                                 " GEMM (KVC_STATUS_UNSUPPORTED): " + run.checks.abi_message);
  }
  r.path = run.path;
  if (r.status.ok()) r.projection = std::move(run.projection);
  // Judged under the policies of the path it took (the one it was asked for when it names none).
  const JudgedStackedProfile judged =
      device.judged_profile(c.storage_dtype(), run.abi_path_taken >= 0 ? run.abi_path_taken : run.abi_path_requested);
  r.profile = judged.profile;
  r.profile_source = judged.source;
  return r;
}

Verdict check_stacked(StackedCtxKvDevice& device, const StackedCtxKvCase& as_built, StackedCheck check,
                      const std::vector<std::int64_t>& sampled_tokens, const std::string& reproduce) {
  // The case in the form the library's cache_loc policy takes (slot 0 reserved: skips at 0).
  const StackedProfile case_profile = device.case_profile(as_built.storage_dtype());
  const StackedCtxKvCase c = in_cache_loc_policy(as_built, case_profile.cache_loc);
  StackedDeviceOptions o;
  o.cache_loc = case_profile.cache_loc;
  std::vector<StackedRun> runs;
  if (check == StackedCheck::kAutoFallsBack) {
    // Stacked parameters whenever they can be built: the library, not their absence, must decide.
    o.stacked_params = StackedParamsPolicy::kWheneverBuildable;
    StackedRun r = run_stacked(device, c, o, "device AUTO");
    r.required_path = StackedPath::kPerLayer;
    r.projection.reset();  // the fallback is judged on its pools
    runs.push_back(std::move(r));
    return judge_stacked(c, sampled_tokens, StackedGemm::kExactOrder, runs, reproduce, case_profile);
  }
  o.gemm = check == StackedCheck::kAnyOrder ? StackedGemm::kAnyOrder : StackedGemm::kExactOrder;
  // The exact order on a fused-eligible model: the forced fused path too (docs/contract.md §4.5).
  // A library without the fused path answers KVC_STATUS_UNSUPPORTED for it; its AUTO must then
  // take the stacked path, and the fused run is left out.
  bool fused_implemented = false;
  if (check == StackedCheck::kExactOrder && stacked_fused_eligibility(c).eligible()) {
    StackedDeviceOptions f = o;
    f.path = StackedPathRequest::kFused;
    try {
      StackedRun r = run_stacked(device, c, f, "device fused, exact-order GEMM");
      r.name += std::string(" (") + path_name(r.path) + " path)";
      r.required_path = StackedPath::kFused;
      runs.push_back(std::move(r));
      fused_implemented = true;
    } catch (const StackedGemmUnsupported&) {
    }
  }
  for (StackedPathRequest path : {StackedPathRequest::kAuto, StackedPathRequest::kPerLayer}) {
    o.path = path;
    const bool automatic = path == StackedPathRequest::kAuto;
    StackedRun r = run_stacked(
        device, c, o, std::string("device ") + (automatic ? "AUTO" : "per-layer") + ", " + gemm_name(o.gemm) + " GEMM");
    r.name += std::string(" (") + path_name(r.path) + " path)";
    // The exact order: an eligible model handed stacked parameters takes the stacked path under
    // AUTO, and the per-layer request the per-layer path. The any-order GEMM's path is the
    // library's choice (the report names the one it took).
    if (check == StackedCheck::kExactOrder)
      r.required_path = !automatic          ? StackedPath::kPerLayer
                        : fused_implemented ? StackedPath::kFused
                                            : StackedPath::kStacked;
    runs.push_back(std::move(r));
  }
  return judge_stacked(c, sampled_tokens, o.gemm, runs, reproduce, case_profile);
}

}  // namespace kvc::testkit
