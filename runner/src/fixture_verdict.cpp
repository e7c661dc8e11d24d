// fixture_verdict.cpp: see fixture_verdict.h.
#include "fixture_verdict.h"

#include <algorithm>
#include <vector>

#include "kvc/golden/fixture_check.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/mismatch_classes.h"

namespace kvc::runner {

void judge_fixture(const golden::Fixture& f, RecordingBackend& recorder, CheckResult& r) {
  const golden::FixtureCheck fc = golden::check_fixture(f, recorder);
  if (fc.verdict == golden::Verdict::kSkipped) {
    r.verdict = Verdict::kSkipped;
    r.message = fc.report;
  } else if (fc.verdict == golden::Verdict::kDiffers) {
    fail(r, recorder.name() + " differs from fixture " + f.name + " (" + f.provenance() + ")\n" + fc.report);
    const InsertOutputs initial = testkit::make_outputs(f.c, f.canary);
    std::vector<std::uint8_t> expected = initial.cache;
    std::copy(f.expected_cache.begin(), f.expected_cache.end(), expected.begin());
    if (recorder.last().cache.size() == expected.size())
      r.classes =
          testkit::classify_insert_mismatches(f.c, kvc::vllm_profile(), initial.cache, expected, recorder.last().cache);
  }
}

}  // namespace kvc::runner
