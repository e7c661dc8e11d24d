// config_paths.h: where the paths in a shim's config point. The config file is named by an
// environment variable, relative to the working directory of the process that loads the shim;
// the libraries it lists are named relative to the config file's own folder, so that a config
// and the extension beside it can be moved or checked in together and the suite can be run from
// any directory (a path relative to the working directory would break as soon as ctest or
// kvconform runs from the build folder).
#pragma once

#include <string>

namespace kvc::shim {

// The config file's path made absolute against the working directory (lexically normal).
std::string absolute_config_path(const std::string& path);

// The folder holding a config file given by its absolute path.
std::string config_folder(const std::string& absolute_config);

// A "libraries" entry as dlopen() gets it: an absolute path unchanged; a bare file name (no '/')
// unchanged, so that the dynamic loader searches for it as it does for any dlopen (LD_LIBRARY_PATH,
// the runpath, ld.so.cache: "libtorch_cuda.so"); any other relative path ("./ext.so",
// "../lib/ext.so") resolved against `folder`, the config's folder.
std::string resolve_library_path(const std::string& library, const std::string& folder);

}  // namespace kvc::shim
