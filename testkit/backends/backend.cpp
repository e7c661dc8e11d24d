// backend.cpp: the Backend interface's defaults (see backend.h).
#include "testkit/backends/backend.h"

#include <stdexcept>

namespace kvc::testkit {

kvc::Profile Backend::declared_profile(const InsertCase& c) const {
  kvc::Profile p = kvc::vllm_profile();
  p.rsqrt = rsqrt_mode(c.op, c.op == InsertOp::kLegacy);
  return p;
}

Support Backend::supports_store(const StoreCase& c) const {
  (void)c;
  return {false, name() + " has no store op"};
}

Status Backend::run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) {
  (void)c;
  (void)backing;
  throw std::logic_error(name() + " has no store op: check supports_store() before run_store()");
}

kvc::Profile Backend::declared_store_profile(const StoreCase& c) const {
  (void)c;
  return kvc::vllm_profile();
}

}  // namespace kvc::testkit
