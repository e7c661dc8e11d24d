// store_target.cpp: see store_target.h.
#include "testkit/device/store_target.h"

#include "testkit/cases/declared_store_layout.h"

namespace kvc::testkit {

StoreTarget store_target(const DeviceBackend& device, const StoreCase& given) {
  StoreTarget t;
  const Declaration* declared = device.declared().declaration_of(given);
  if (device.library().abi().kvc_store_rotated == nullptr || declared == nullptr || !declared->supported) {
    t.outcome = StoreTargetOutcome::kNotDeclared;
    t.why_not = device.supports_store(given).reason;
    return t;
  }
  const DeclaredStoreLayout laid = in_declared_layout(given, declared->capabilities.limits);
  if (!laid.c) {
    t.outcome = StoreTargetOutcome::kOutsideLimits;
    t.why_not = "the library does not take this case: " + laid.why_not;
    return t;
  }
  t.c = laid.c;
  t.relaid = laid.relaid;
  if (const Support s = device.supports_store(*laid.c); !s.supported) {
    t.outcome = StoreTargetOutcome::kLaidOutRefused;
    t.why_not = s.reason;
    return t;
  }
  t.outcome = StoreTargetOutcome::kSend;
  return t;
}

}  // namespace kvc::testkit
