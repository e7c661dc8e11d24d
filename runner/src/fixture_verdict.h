// fixture_verdict.h: one golden fixture run through a backend, as a runner check.
//
// The oracle's golden suite and the kernel golden suite judge a fixture the same way: skipped with
// the backend's reason, or failed with the fixture comparator's report and the mismatch classes of
// the cache bytes the backend wrote.
#pragma once

#include "kvc/golden/fixture.h"
#include "recording_backend.h"
#include "run_report.h"

namespace kvc::runner {

// Runs `f` through `recorder` and records the verdict in `r` (a passed check stays passed).
// Backend exceptions propagate: the kernel suite turns them into damage reports.
void judge_fixture(const golden::Fixture& f, RecordingBackend& recorder, CheckResult& r);

}  // namespace kvc::runner
