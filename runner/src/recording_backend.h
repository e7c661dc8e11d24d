// recording_backend.h: a backend that forwards to another and keeps what the last run wrote.
//
// The checkers (policy_report.h, golden fixture_check.h) run a backend themselves; wrapped in
// this one, the runner still gets the bytes to classify and to compare with a second run. It can
// also replace the profile the inner backend declares (`kvconform run --profile SPEC`).
#pragma once

#include <optional>
#include <string>

#include "testkit/backends/backend.h"

namespace kvc::runner {

class RecordingBackend final : public testkit::Backend {
 public:
  RecordingBackend(testkit::Backend& inner, std::optional<kvc::Profile> profile = std::nullopt)
      : inner_(inner), profile_(profile) {}
  std::string name() const override { return inner_.name(); }
  testkit::Support supports(const InsertCase& c) const override { return inner_.supports(c); }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    last_ = InsertOutputs{};
    const Status s = inner_.run(c, out);
    last_ = out;
    return s;
  }
  RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const override {
    if (profile_) return profile_->rsqrt;
    return inner_.rsqrt_mode(op, q_norm);
  }
  kvc::Profile declared_profile(const InsertCase& c) const override {
    return profile_ ? *profile_ : inner_.declared_profile(c);
  }
  const InsertOutputs& last() const { return last_; }

 private:
  testkit::Backend& inner_;
  std::optional<kvc::Profile> profile_;
  InsertOutputs last_;
};

}  // namespace kvc::runner
