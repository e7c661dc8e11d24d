// store_target.h: the store case a kernel library is sent, or why none is: the one sequence the
// store matrix of the GPU suite and the runner's store suite both follow.
//
// First the entry point and the declared format (a library without either is skipped with its own
// reason); then the case laid out in the library's declared geometry where the contract allows it
// (declared_store_layout.h: SGLang's 2-D cache for a library that takes nothing else); a block size
// or index range outside the limits is skipped naming the limit. A laid-out case the library still
// calls unsupported is a contradiction in its declaration, which the caller decides how to report
// (the GPU test fails on it; the runner skips with the library's words).
#pragma once

#include <optional>
#include <string>

#include "kvc/store_case.h"
#include "testkit/backends/backend.h"
#include "testkit/device/device_backend.h"

namespace kvc::testkit {

enum class StoreTargetOutcome {
  kSend,            // `c` is the case to send (laid out inside the declared limits)
  kNotDeclared,     // no store entry point, or the format is not declared supported
  kOutsideLimits,   // the declared geometry has no layout for this case
  kLaidOutRefused,  // laid out inside the limits, but supports_store still says no
};

struct StoreTarget {
  StoreTargetOutcome outcome = StoreTargetOutcome::kNotDeclared;
  std::optional<StoreCase> c;  // set for kSend (and kLaidOutRefused: the case that was refused)
  bool relaid = false;         // c is in another layout than the case given
  std::string why_not;         // the reason for every outcome but kSend
};

// What `device` is sent for the valid store case `given`.
StoreTarget store_target(const DeviceBackend& device, const StoreCase& given);

}  // namespace kvc::testkit
