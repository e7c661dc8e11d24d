// kernel_library.h: a kernel library as the suite sees it: the table of C ABI entry points.
//
// Every kernel the suite runs is reached through the C kernel ABI (kvc/kernel_abi.h): our own
// kernels, linked in statically (builtin()), or any shared object that exports the same symbols
// (open(path): a vLLM or SGLang shim). Nothing else in the suite knows which one it drives, so
// everything the suite does to our kernels it does to theirs. from_environment() picks
// KVC_KERNELS=path.so when set, else ours.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "kvc/kernel_abi.h"

namespace kvc::testkit {

// One function pointer per ABI symbol, named like the symbol (KVC_ABI_SYMBOLS, always set, and
// KVC_ABI_OPTIONAL_SYMBOLS, nullptr when the library does not export it).
struct KernelAbi {
#define KVC_ABI_POINTER(symbol) decltype(&::symbol) symbol = nullptr;
  KVC_ABI_SYMBOLS(KVC_ABI_POINTER)
  KVC_ABI_OPTIONAL_SYMBOLS(KVC_ABI_POINTER)
#undef KVC_ABI_POINTER
};

// Loading failed: the path, what was missing or wrong, and what to do about it.
class KernelLibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The environment variable that selects a kernel library for the GPU suite, fuzzing and benches.
inline constexpr const char* kKernelLibraryEnv = "KVC_KERNELS";

class KernelLibrary {
 public:
  // Our kernels (kvc::kernels), linked into this program.
  static KernelLibrary builtin();
  // dlopen + dlsym of every ABI symbol, then the ABI major version check. Throws
  // KernelLibraryError naming the path and every missing symbol, or both versions.
  static KernelLibrary open(const std::string& path);
  // KVC_KERNELS when set and non-empty, else builtin().
  static KernelLibrary from_environment();

  const KernelAbi& abi() const { return abi_; }
  // kvc_library_info.name, e.g. "kvconform-kernels 0.1.0".
  const std::string& name() const { return name_; }
  // "builtin" or the path given to open().
  const std::string& origin() const { return origin_; }
  // KVC_KERNEL_ABI_VERSION the library was built against (major * 1000 + minor).
  std::int32_t abi_version() const { return abi_version_; }
  // "kvconform-kernels 0.1.0 (builtin, ABI 1.0)": for test logs and backend names.
  std::string describe() const;

 private:
  KernelLibrary(KernelAbi abi, std::string origin);

  KernelAbi abi_;
  std::string origin_;
  std::string name_;
  std::int32_t abi_version_ = 0;
};

}  // namespace kvc::testkit
