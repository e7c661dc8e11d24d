// probe_library.h: the kernel library `kvconform probe` sends its calls to: what it exports and
// declares (host code, no device needed), and one call sent through the device with the checks
// the probe reports.
//
// Built with the device backend (CUDA builds); in a CPU build the library cannot be loaded and
// kernel_suites.h's device_backend_unavailable() says why.
#pragma once

#include <memory>
#include <string>

#include "probe_cells.h"
#include "testkit/probe/probe_observation.h"

namespace kvc::runner {

// What the library declares for one cell's call.
struct CellDeclaration {
  // The call's (op, format, kv dtype) is one the library declares unsupported: by ABI 1.2 it
  // answers KVC_STATUS_UNSUPPORTED before any validation code, and 402 is a right answer.
  bool outside_support = false;
  // The rule's code is among those the library declares it enforces (kvc_op_support.validation:
  // ALL, or LISTED with the code listed); false for NONE, or LISTED without it.
  bool declared_enforced = true;
};

class ProbeLibrary {
 public:
  // Loads `path`, else KVC_KERNELS, else our kernels (no device needed). Throws
  // std::runtime_error naming the path and what is wrong with it.
  explicit ProbeLibrary(const std::string& path);
  ~ProbeLibrary();
  ProbeLibrary(const ProbeLibrary&) = delete;
  ProbeLibrary& operator=(const ProbeLibrary&) = delete;

  // "kvconform-kernels 0.1.0 (builtin, ABI 1.2)"
  std::string describe() const;
  // The entry point of the family is exported (the insert ones always are).
  bool exports(ProbeFamily family) const;
  CellDeclaration declaration(const ProbeCell& cell) const;
  // Sends the cell's call straight to the library (no host validation), inside guard zones, and
  // reports what happened: status, a sticky CUDA error, the located writes and bad rows
  // (testkit/probe/probe_writes.h). Needs a CUDA device; the cell must be sendable.
  testkit::ProbeObservation send(const ProbeCell& cell);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvc::runner
