// backend_choice.cpp: the oracle or a device backend for kvconform-fuzz (see backend_choice.h).
// KVC_FUZZ_HAVE_DEVICE is set by fuzz/CMakeLists.txt in CUDA builds (kvc::testkit_device).
#include "testkit/backends/oracle_backend.h"
#include "kvc/fuzz/backend_choice.h"

#include <cstdlib>

#if KVC_FUZZ_HAVE_DEVICE
#include "testkit/device/device_backend.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/kernel_library.h"
#endif

namespace kvc::fuzz {
namespace {

constexpr const char* kKernelsEnv = "KVC_KERNELS";  // testkit::kKernelLibraryEnv, in every build

std::string library_path(const BackendChoice& choice) {
  if (!choice.kernels.empty()) return choice.kernels;
  const char* env = std::getenv(kKernelsEnv);
  return env != nullptr ? env : "";
}

}  // namespace

bool backend_kind_from_name(const std::string& name, BackendKind* kind) {
  if (name == "oracle") {
    *kind = BackendKind::kOracle;
    return true;
  }
  if (name == "device") {
    *kind = BackendKind::kDevice;
    return true;
  }
  return false;
}

bool device_backend_built() {
#if KVC_FUZZ_HAVE_DEVICE
  return true;
#else
  return false;
#endif
}

std::unique_ptr<testkit::Backend> make_backend(const BackendChoice& choice) {
  if (choice.kind == BackendKind::kOracle) {
    if (!choice.kernels.empty())
      throw std::invalid_argument("--kernels selects a kernel library for --backend device, not for the oracle");
    oracle::OracleOptions options;
    options.mutation = choice.mutation;
    options.profile = choice.profile;
    return std::make_unique<testkit::OracleBackend>(options);
  }
  if (choice.mutation != oracle::OracleMutation::kNone)
    throw std::invalid_argument("--mutation breaks the oracle; it does not apply to --backend device");
  if (choice.profile != kvc::vllm_profile())
    throw std::invalid_argument(
        "--profile sets the oracle's profile; with --backend device the kernel library "
        "declares its own (kvc_op_support_get)");
#if KVC_FUZZ_HAVE_DEVICE
  if (const std::string reason = testkit::cuda_device_unavailable(); !reason.empty())
    throw BackendUnavailable("--backend device needs a CUDA GPU: " + reason +
                             " (--backend oracle runs the same properties on the CPU)");
  const std::string path = library_path(choice);
  try {
    testkit::KernelLibrary library =
        path.empty() ? testkit::KernelLibrary::builtin() : testkit::KernelLibrary::open(path);
    return std::make_unique<testkit::DeviceBackend>(std::move(library));
  } catch (const testkit::KernelLibraryError& e) {
    throw BackendUnavailable(std::string("--backend device: ") + e.what());
  }
#else
  throw BackendUnavailable(
      "--backend device: this build has no device backend (configured without CUDA; reconfigure with -DKVC_CUDA=ON "
      "on a machine with nvcc)");
#endif
}

std::string backend_flags(const BackendChoice& choice) {
  if (choice.kind == BackendKind::kOracle) return "";
  const std::string path = library_path(choice);
  return "--backend device" + (path.empty() ? std::string() : " --kernels " + path);
}

}  // namespace kvc::fuzz
