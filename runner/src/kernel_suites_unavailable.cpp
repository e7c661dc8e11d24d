// kernel_suites_unavailable.cpp: kernel conformance in a build without the device backend (no
// CUDA): every entry point says so (see kernel_suites.h).
#include <stdexcept>

#include "kernel_suites.h"

namespace kvc::runner {

namespace {
constexpr const char* kNoDeviceBackend =
    "this build has no device backend (configured without CUDA; reconfigure with -DKVC_CUDA=ON on a machine with nvcc)";
}  // namespace

std::string device_backend_unavailable() { return kNoDeviceBackend; }

std::string cuda_device_unavailable_reason() { return kNoDeviceBackend; }

std::string device_description() { return std::string("none: ") + kNoDeviceBackend; }

struct KernelSession::Impl {};

KernelSession::KernelSession(const std::string& path) {
  (void)path;
  throw std::runtime_error(kNoDeviceBackend);
}

KernelSession::~KernelSession() = default;

std::string KernelSession::library() const { return ""; }

std::vector<OpDeclaration> KernelSession::declarations() const { return {}; }

void KernelSession::run_suite(const std::string& suite, const RunOptions& options, const RunSink& sink) {
  (void)suite;
  (void)options;
  (void)sink;
  throw std::logic_error(kNoDeviceBackend);
}

}  // namespace kvc::runner
