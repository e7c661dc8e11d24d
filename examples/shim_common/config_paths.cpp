// config_paths.cpp: paths in a shim's config (see config_paths.h).
#include "config_paths.h"

#include <filesystem>

namespace kvc::shim {

namespace fs = std::filesystem;

std::string absolute_config_path(const std::string& path) {
  return fs::absolute(fs::path(path)).lexically_normal().string();
}

std::string config_folder(const std::string& absolute_config) {
  return fs::path(absolute_config).parent_path().string();
}

std::string resolve_library_path(const std::string& library, const std::string& folder) {
  const fs::path p(library);
  if (p.is_absolute() || library.find('/') == std::string::npos) return library;
  return (fs::path(folder) / p).lexically_normal().string();
}

}  // namespace kvc::shim
