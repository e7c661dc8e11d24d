// forwarding_backend.h: a backend that stands for another one and passes its insert-op
// declarations through: name, supports, rsqrt_mode, declared_profile.
//
// Adapters that change how a run is reported (the fuzz campaign's discard of unsupported cases,
// the device fuzz test's exception-to-failure adapter) derive from it and override run() alone;
// the store op stays undeclared unless an adapter forwards it too.
#pragma once

#include <string>

#include "testkit/backends/backend.h"

namespace kvc::testkit {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  Support supports(const InsertCase& c) const override { return inner_.supports(c); }
  RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const override { return inner_.rsqrt_mode(op, q_norm); }
  kvc::Profile declared_profile(const InsertCase& c) const override { return inner_.declared_profile(c); }

 protected:
  Backend& inner() const { return inner_; }

 private:
  Backend& inner_;
};

}  // namespace kvc::testkit
