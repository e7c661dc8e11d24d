// kv_insert_test.cpp: the upstream DSpark test replayed on the oracle, for every registry entry.
//
// Per round: both backings start as 0xA5 canary; the legacy (dummy-query) insert and the KV-only
// insert run on the oracle backend; the whole backings must be byte-identical, rounds with live
// slots must have written something and the all -1 round nothing.
//
// On the oracle the byte-identity half compares the oracle with itself (legacy_insert runs the
// KV-only encoder, insert_kv_rows), so it cannot fail here: it is the upstream claim, meaningful
// when the two ops are kernels (gpu_kv_insert_test replays it on the device). The oracle's KV
// bytes are pinned by the hand-derived vectors of kv_insert_edge_test and record_codec_test. The
// written/not-written checks can fail on the oracle: an oracle that skipped live rows, or wrote a
// record for slot -1, fails them. "kv is not modified" is not checked here: the oracle takes the
// case by const reference, so the type already guarantees it; on the device every input byte is
// compared after each call (testkit/device/device_buffers.h).
#include <gtest/gtest.h>

#include "testkit/cases/registry.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"

namespace kvc {
namespace {

class UpstreamDsparkReplay : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(UpstreamDsparkReplay, KvOnlyEqualsLegacyDummyQueryInsert) {
  const cases::ConformanceSpec& spec = GetParam();
  testkit::OracleBackend oracle;
  for (int round = 0; round < cases::kUpstreamRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const InsertCase kv_only = cases::build_kv_only(spec, round);
    const InsertCase legacy = cases::build_legacy(spec, round);

    InsertOutputs reference = testkit::make_outputs(legacy);
    InsertOutputs insert = testkit::make_outputs(kv_only);
    const Status legacy_status = oracle.run(legacy, reference);
    ASSERT_TRUE(legacy_status.ok()) << legacy_status.ToString();
    const Status insert_status = oracle.run(kv_only, insert);
    ASSERT_TRUE(insert_status.ok()) << insert_status.ToString();

    const testkit::DiffReport diff = testkit::diff_case_backings(kv_only, reference.cache, insert.cache);
    testkit::ReportContext ctx;
    ctx.expected_name = "legacy insert";
    ctx.actual_name = "KV-only insert";
    ctx.case_description = spec.name() + " round " + std::to_string(round);
    ctx.reproduce = "ctest --test-dir build/default -R 'UpstreamDsparkReplay.*" + spec.name() + "'";
    EXPECT_TRUE(diff.equal()) << testkit::format_case_report(kv_only, diff, reference.cache, insert.cache, ctx);

    EXPECT_EQ(testkit::written_iff_live_defect(kv_only, insert.cache), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, UpstreamDsparkReplay, ::testing::ValuesIn(cases::conformance_matrix()),
                         [](const ::testing::TestParamInfo<cases::ConformanceSpec>& p) { return p.param.name(); });

}  // namespace
}  // namespace kvc
