// fixture_check.h: the golden comparator: a backend's bytes against a fixture's frozen bytes.
//
// A fixture is run on a backend exactly as the rest of the suite runs cases: outputs prefilled
// with the fixture's canary (the backing with the testkit's guard zone after it), the case run,
// then the whole backing and q_out compared byte for byte with the frozen expectation. A cache
// difference is reported through the testkit's comparator (page, slot, field, raw bytes and
// decoded values); a q_out difference names token, head and dim with both bytes and the decoded
// 16-bit or e4m3 values. No tolerance: fixtures hold the contract's default profile with the
// correctly rounded rsqrt.
#pragma once

#include <string>

#include "kvc/golden/fixture.h"
#include "testkit/backends/backend.h"

namespace kvc::golden {

enum class Verdict : std::uint8_t { kReproduced, kDiffers, kSkipped };

struct FixtureCheck {
  Verdict verdict = Verdict::kReproduced;
  std::string report;  // why it differs or was skipped; "" when reproduced
};

// Runs the fixture's case on `backend` and compares. Skipped (with the backend's reason) when the
// backend does not support the case, or declares a profile other than the contract's or an
// approximate rsqrt for a case with norm rows (those are judged against the oracle, not frozen
// bytes). A rejection of the case is a difference.
FixtureCheck check_fixture(const Fixture& f, testkit::Backend& backend);

// The comparison alone: "" when `actual` equals the fixture, else the report.
std::string compare_with_fixture(const Fixture& f, const InsertOutputs& actual, const std::string& actual_name);

}  // namespace kvc::golden
