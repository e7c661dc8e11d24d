// probe_library_unavailable.cpp: the probe's library in a build without the device backend (no
// CUDA): it cannot be loaded (see probe_library.h).
#include <stdexcept>

#include "kernel_suites.h"
#include "probe_library.h"

namespace kvc::runner {

struct ProbeLibrary::Impl {};

ProbeLibrary::ProbeLibrary(const std::string& path) {
  (void)path;
  throw std::runtime_error(device_backend_unavailable());
}

ProbeLibrary::~ProbeLibrary() = default;

std::string ProbeLibrary::describe() const { return ""; }

bool ProbeLibrary::exports(ProbeFamily family) const {
  (void)family;
  return false;
}

CellDeclaration ProbeLibrary::declaration(const ProbeCell& cell) const {
  (void)cell;
  return {};
}

testkit::ProbeObservation ProbeLibrary::send(const ProbeCell& cell) {
  (void)cell;
  throw std::logic_error(device_backend_unavailable());
}

}  // namespace kvc::runner
