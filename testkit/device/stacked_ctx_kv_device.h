// stacked_ctx_kv_device.h: running a StackedCtxKvCase through a kernel library's ABI on the GPU.
//
// Like DeviceBackend for the insert ops: run() validates on the host (strict, values included)
// unless told not to, uploads every tensor into its own guarded allocation (guard zones on both
// sides; byte-identical rotary tables once, so that a model whose layers share one table reaches
// the library as one tensor, as SGLang's shared rotary object does), uploads the stacked weight
// and bias (built by an oracle::StackedParamCache on the host, the caller's cache), calls
// kvc_stacked_ctx_kv, synchronises, downloads the pools (and the projection when asked) and checks
// every guard zone and that every input is unchanged (after a rejection: that every buffer is).
// Damage throws BufferDamageError; a status outside the validation codes throws KernelCallError.
//
// The stacked policies a run is judged under are the library's declaration for the path it took
// (KVC_OP_STACKED_CTX_KV for per-layer and stacked, KVC_OP_STACKED_CTX_KV_FUSED for fused; the
// path forced when the library reports none), or the override a caller sets
// (`kvconform run --stacked-profile`). Cases are laid out for the cache_loc policy of
// case_profile() (testkit/cases/stacked_cache_loc_layout.h) and validated on the host under it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvc/oracle/stacked_ctx_kv_params.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/stacked_profile.h"
#include "testkit/backends/backend.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"
#include "testkit/device/declared_support.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/kernel_library.h"
#include "testkit/device/owned_stream.h"

namespace kvc::testkit {

// When the run hands the library stacked parameters (stacked_weight, stacked_bias).
enum class StackedParamsPolicy : std::uint8_t {
  kWhenEligible = 0,       // the model is eligible (by content): what a caller would do
  kWheneverBuildable = 1,  // the layers have one head_dim, kv heads, dtype and bias presence, eligible
                           // or not (layer 0's eps and table): AUTO must then decide by itself
  kNever = 2,
};

// A deliberate defect in the stacked parameters handed over (the library must answer E158).
enum class StackedParamsDefect : std::uint8_t { kNone = 0, kOneRowShort = 1, kBiasMissing = 2 };

struct StackedDeviceOptions {
  StackedPathRequest path = StackedPathRequest::kAuto;
  StackedGemm gemm = StackedGemm::kExactOrder;
  bool host_validation = true;  // false: the library's own (metadata) validation is what rejects
  StackedParamsPolicy stacked_params = StackedParamsPolicy::kWhenEligible;
  StackedParamsDefect params_defect = StackedParamsDefect::kNone;
  bool read_projection = false;  // pass a projection output and download it
  // The cache_loc policy the host validation applies (E159 under slot 0 reserved).
  CacheLocPolicy cache_loc = CacheLocPolicy::kNegativeSkipped;
};

// The stacked profile a run is judged under, and where it comes from, for reports.
struct JudgedStackedProfile {
  StackedProfile profile;
  std::string source;  // "declared for its per-layer and stacked paths", "--stacked-profile", ...
};

struct StackedDeviceRun {
  bool abi_called = false;
  StackedPath path = StackedPath::kPerLayer;  // kvc_stacked_ctx_kv's path_taken
  std::int32_t abi_path_taken = -1;           // as the library wrote it (-1: it wrote none)
  std::int32_t abi_path_requested = KVC_STACKED_PATH_AUTO;
  std::vector<std::uint16_t> projection;  // [T, projection_width()] when read_projection
  DeviceRunChecks checks;
};

class StackedCtxKvDevice {
 public:
  explicit StackedCtxKvDevice(KernelLibrary library);
  StackedCtxKvDevice(const StackedCtxKvDevice&) = delete;
  StackedCtxKvDevice& operator=(const StackedCtxKvDevice&) = delete;

  // Whether the library exports kvc_stacked_ctx_kv and declares x's dtype supported.
  Support supports(const StackedCtxKvCase& c) const;
  const KernelLibrary& library() const { return library_; }
  oracle::StackedParamCache& param_cache() { return cache_; }

  Status run(const StackedCtxKvCase& c, StackedCtxKvOutputs& out, const StackedDeviceOptions& options = {},
             StackedDeviceRun* run = nullptr);

  // Judge under `profile` instead of the library's declarations (nothing: the declarations).
  void set_profile_override(std::optional<StackedProfile> profile) { override_ = std::move(profile); }
  const std::optional<StackedProfile>& profile_override() const { return override_; }
  // The profile of a run on kvc_stacked_path `abi_path` with storage dtype `d`: the override, else
  // the declaration of that path's query (an undeclared fused path: the contract, saying so).
  JudgedStackedProfile judged_profile(DType d, std::int32_t abi_path) const;
  // The profile cases are laid out and validated for: judged_profile() of the per-layer path.
  StackedProfile case_profile(DType d) const;

 private:
  std::optional<StackedProfile> override_;
  KernelLibrary library_;
  DeclaredSupport declared_;
  oracle::StackedParamCache cache_;
  void* stream();  // the runner's own stream, created on first use
  std::optional<OwnedStream> stream_;
};

}  // namespace kvc::testkit
