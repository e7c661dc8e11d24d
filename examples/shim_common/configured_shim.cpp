// configured_shim.cpp: a shim's configuration on first use (see configured_shim.h).
#include "configured_shim.h"

#include <dlfcn.h>

#include <cstdlib>
#include <exception>

namespace kvc::shim {

void ConfiguredShim::configure(const ConfigSource& source, const std::function<void(const ShimConfig&)>& bind,
                               const std::string& name_suffix) {
  const char* path = std::getenv(source.env);
  try {
    if (path == nullptr || *path == '\0')
      throw ConfigError(std::string(source.env) + " is not set: it names the JSON file that binds the ABI's entry " +
                        "points to " + state_.op_kind + "s (" + source.readme + ")");
    state_.config = load_shim_config(path, source.naming);
    bind(state_.config);
  } catch (const std::exception& e) {
    state_.error = e.what();
  } catch (...) {  // a library's static initialiser may throw anything: still a reason, never a crash
    state_.error = "configuring threw an exception that is not a std::exception";
  }
  name_ = std::string("kvconform ") + state_.shim_kind + " over " +
          (state_.error.empty() ? state_.config.name : "nothing: NOT CONFIGURED: " + state_.error) + name_suffix;
}

std::vector<void*> open_libraries(const ShimConfig& config, int dlopen_flags) {
  std::vector<void*> handles;
  for (const std::string& lib : config.libraries) {
    void* h = dlopen(lib.c_str(), dlopen_flags);
    if (h == nullptr)
      throw ConfigError("dlopen " + lib + ": " + dlerror() +
                        (lib.find('/') == std::string::npos
                             ? " (a name without '/' is searched for by the dynamic loader: LD_LIBRARY_PATH, the "
                               "runpath, ld.so.cache; write \"./" +
                                   lib + "\" for the config's folder)"
                             : std::string()));
    handles.push_back(h);
  }
  return handles;
}

}  // namespace kvc::shim
