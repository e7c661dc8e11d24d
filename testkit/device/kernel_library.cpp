// kernel_library.cpp: builtin and dlopen'ed kernel libraries (see kernel_library.h).
#include "testkit/device/kernel_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace kvc::testkit {
namespace {

std::string version_string(std::int32_t v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000); }

}  // namespace

KernelLibrary::KernelLibrary(KernelAbi abi, std::string origin) : abi_(abi), origin_(std::move(origin)) {
  kvc_library_info info{};
  info.struct_size = sizeof info;
  const int rc = abi_.kvc_library_info_get(&info);
  if (rc != KVC_STATUS_OK) throw KernelLibraryError(origin_ + ": kvc_library_info_get returned " + std::to_string(rc));
  abi_version_ = info.abi_version;
  name_ = info.name != nullptr ? info.name : "(unnamed library)";
  if (abi_version_ / 1000 != KVC_KERNEL_ABI_VERSION_MAJOR)
    throw KernelLibraryError(origin_ + " (" + name_ + ") was built against kernel ABI " + version_string(abi_version_) +
                             "; this suite speaks ABI " + version_string(KVC_KERNEL_ABI_VERSION) +
                             " and refuses another major version: rebuild the library against this kvc/kernel_abi.h");
}

KernelLibrary KernelLibrary::builtin() {
#if KVC_HAVE_BUILTIN_KERNELS
  KernelAbi abi;
#define KVC_ABI_BUILTIN(symbol) abi.symbol = &::symbol;
  KVC_ABI_SYMBOLS(KVC_ABI_BUILTIN)
  KVC_ABI_OPTIONAL_SYMBOLS(KVC_ABI_BUILTIN)
#undef KVC_ABI_BUILTIN
  return KernelLibrary(abi, "builtin");
#else
  throw KernelLibraryError(
      "this build has no builtin kernels (the kvc::kernels target was not built); point KVC_KERNELS at a kernel "
      "library");
#endif
}

KernelLibrary KernelLibrary::open(const std::string& path) {
  dlerror();  // clear any earlier error so the message below is this call's
  // RTLD_LOCAL: the library's own symbols (it may bundle a CUDA runtime or a copy of our ABI
  // names) must not interpose on the program's. The handle is never closed: a CUDA library
  // registers its kernels with the runtime when loaded, and unloading it under the runtime is
  // not safe; a test process loads a library once.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw KernelLibraryError("cannot load kernel library " + path + ": " + (why ? why : "dlopen failed") + " (" +
                             kKernelLibraryEnv + " must name a shared object that implements kvc/kernel_abi.h)");
  }
  KernelAbi abi;
  std::vector<std::string> missing;
#define KVC_ABI_LOOKUP(symbol)                                                \
  abi.symbol = reinterpret_cast<decltype(&::symbol)>(dlsym(handle, #symbol)); \
  if (abi.symbol == nullptr) missing.push_back(#symbol);
  KVC_ABI_SYMBOLS(KVC_ABI_LOOKUP)
#undef KVC_ABI_LOOKUP
  // Optional entry points stay nullptr when absent; the backend reports their ops as skipped.
#define KVC_ABI_OPTIONAL_LOOKUP(symbol) abi.symbol = reinterpret_cast<decltype(&::symbol)>(dlsym(handle, #symbol));
  KVC_ABI_OPTIONAL_SYMBOLS(KVC_ABI_OPTIONAL_LOOKUP)
#undef KVC_ABI_OPTIONAL_LOOKUP
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw KernelLibraryError(
        "kernel library " + path + " does not export " + list +
        " (every symbol of KVC_ABI_SYMBOLS in kvc/kernel_abi.h is required, with C linkage and default visibility)");
  }
  return KernelLibrary(abi, path);
}

KernelLibrary KernelLibrary::from_environment() {
  const char* path = std::getenv(kKernelLibraryEnv);
  if (path != nullptr && *path != '\0') return open(path);
  return builtin();
}

std::string KernelLibrary::describe() const {
  return name_ + " (" + origin_ + ", ABI " + version_string(abi_version_) + ")";
}

}  // namespace kvc::testkit
