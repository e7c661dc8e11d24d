// configured_shim.h: what the libtorch and the tvm-ffi shim do alike on first use. Each reads
// the config its environment variable names, opens the libraries the config lists, and binds
// every configured op (its own step: a torch schema, a tvm-ffi symbol); any failure leaves the
// shim unconfigured, every op then declared unsupported with that failure as the reason (so the
// suite reports every case skipped and says why). And the name it reports (kvc_library_info_get).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "abi_call.h"
#include "shim_config.h"

namespace kvc::shim {

// Where a shim's config comes from.
struct ConfigSource {
  const char* env;     // the variable naming the JSON file: kTorchShimConfigEnv, kTvmFfiShimConfigEnv
  OpNaming naming;     // how the config names ops
  const char* readme;  // where the format is explained: "examples/torch_shim/README.md"
};

// A shim's configured half: its state (config, or the error that left it unconfigured) and name.
class ConfiguredShim {
 public:
  ShimState& state() { return state_; }
  const std::string& name() const { return name_; }

 protected:
  // shim_kind: "torch shim"; op_kind: "torch op" (ShimState).
  ConfiguredShim(const char* shim_kind, const char* op_kind) : state_{shim_kind, op_kind, {}, {}, {}} {}

  // Called by the shim's constructor, once its own members exist: loads the config and calls
  // bind(config) to open its libraries and find its ops; whatever throws leaves the shim
  // unconfigured with the message. The name becomes "kvconform <shim kind> over <config name>"
  // (or "over nothing: NOT CONFIGURED: <error>"), then name_suffix.
  void configure(const ConfigSource& source, const std::function<void(const ShimConfig&)>& bind,
                 const std::string& name_suffix = {});

 private:
  ShimState state_;
  std::string name_;
};

// dlopen()s every library the config lists with `dlopen_flags`, in order (paths as
// load_shim_config resolved them against the config's folder); throws ConfigError naming the one
// that fails to load.
std::vector<void*> open_libraries(const ShimConfig& config, int dlopen_flags);

// Calls f(binding) for every binding of every entry point. Bindings live as long as the config,
// so a shim may key what it found by their address.
template <typename F>
void for_each_binding(const ShimConfig& config, F&& f) {
  for (const auto& [entry, bindings] : config.ops)
    for (const OpBinding& b : bindings) f(b);
}

}  // namespace kvc::shim
