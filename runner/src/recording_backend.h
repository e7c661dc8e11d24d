// recording_backend.h: a backend that forwards to another and keeps what the last run wrote.
//
// The golden fixture checker (golden fixture_check.h) runs a backend itself; wrapped in this one,
// the runner still gets the bytes to classify and to count as compared. It can also replace the
// profile the inner backend declares (`kvconform run --profile SPEC`). The oracle comparisons do
// not need it: the runner runs the library itself and hands the judge (testkit/compare/judge.h)
// the status and the outputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
    last_status_ = Status::Ok();
    last_status_ = inner_.run(c, out);
    last_ = out;
    return last_status_;
  }
  RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const override {
    if (profile_) return profile_->rsqrt;
    return inner_.rsqrt_mode(op, q_norm);
  }
  kvc::Profile declared_profile(const InsertCase& c) const override {
    return profile_ ? *profile_ : inner_.declared_profile(c);
  }
  const InsertOutputs& last() const { return last_; }
  // The status of the last run (ok before any).
  const Status& last_status() const { return last_status_; }

 private:
  testkit::Backend& inner_;
  std::optional<kvc::Profile> profile_;
  InsertOutputs last_;
  Status last_status_ = Status::Ok();
};

}  // namespace kvc::runner
