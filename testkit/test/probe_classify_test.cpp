// probe_classify_test.cpp: the probe's classifier names every class from a planted observation.
//
// PlantedObservation: for every class of probe_class.h, an input that shows only that behaviour
// (a child killed by SIGSEGV, a guard byte written, a sticky fault, a record written from outside
// the table, ...) must get that class and a where that names the buffer, offset, row and slot or
// the status. Catches: a class the classifier never returns, a rejection counted right although it
// wrote bytes, a stray write hidden behind a returned code, a 402 for a call outside the declared
// support called "another code", a where that loses the row and slot. Precedence: the worse
// behaviour wins when several show in one call. The child's JSON line must round-trip and be
// found among a library's own output.
#include <gtest/gtest.h>

#include <csignal>
#include <set>

#include "kvc/kernel_abi.h"
#include "testkit/probe/classify_probe.h"

namespace kvc::testkit {
namespace {

ProbeInput reported(int status, std::vector<int> right = {101}) {
  ProbeInput in;
  in.child.reported = true;
  in.observed.status = status;
  in.expected.right_codes = std::move(right);
  return in;
}

ProbeWrite write(WriteSite site, std::string what, std::int64_t offset, std::int64_t bytes, std::int64_t row = -1,
                 std::int64_t slot = -1) {
  return {"kv_cache (backing)", site, std::move(what), offset, bytes, row, slot};
}

struct Planted {
  std::string name;
  ProbeInput input;
  ProbeClass expected;
  std::string where_contains;
};

std::vector<Planted> planted_inputs() {
  std::vector<Planted> v;
  {
    ProbeInput in = reported(0);
    in.child = {ChildEnd::kSignaled, 0, SIGSEGV, 0, false, "Segmentation fault"};
    v.push_back({"Segfault", in, ProbeClass::kCrashed, "signal 11 (SIGSEGV): Segmentation fault"});
  }
  {
    ProbeInput in = reported(0);
    in.child = {ChildEnd::kExited, 1, 0, 0, false, "terminate called after throwing"};
    v.push_back({"ExitWithoutResult", in, ProbeClass::kCrashed, "exited with status 1 without a result"});
  }
  {
    ProbeInput in = reported(0);
    in.child = {ChildEnd::kTimedOut, 0, 0, 120, false, ""};
    v.push_back({"TimeLimit", in, ProbeClass::kHung, "killed after 120 s"});
  }
  {
    ProbeInput in = reported(0);
    in.observed.writes = {write(WriteSite::kAddressedRecord, "addressed records", 0, 1752),
                          write(WriteSite::kGuardZone, "guard after", 19200, 328, 0, 32)};
    v.push_back({"GuardAfterWritten", in, ProbeClass::kWroteOutOfBounds,
                 "kv_cache (backing) guard after +19200, 328 bytes (row 0, slot 32)"});
  }
  {
    ProbeInput in = reported(0);
    in.observed.writes = {write(WriteSite::kOutsideRecords, "page padding", 9400, 4)};
    v.push_back({"PagePaddingWritten", in, ProbeClass::kWroteOutOfBounds, "page padding +9400, 4 bytes"});
  }
  {
    ProbeInput in = reported(101);
    in.observed.writes = {ProbeWrite{"kv", WriteSite::kInput, "input changed", 12, 2, -1, -1}};
    v.push_back({"InputChangedByARejectedCall", in, ProbeClass::kWroteOutOfBounds,
                 "kv input changed +12, 2 bytes (after returning 101 kKvDtype)"});
  }
  {
    ProbeInput in = reported(0);
    in.observed.cuda_fault = "cudaStreamSynchronize: cudaErrorMisalignedAddress: misaligned address";
    v.push_back({"StickyFault", in, ProbeClass::kCudaFault, "cudaErrorMisalignedAddress"});
  }
  {
    ProbeInput in = reported(KVC_STATUS_CUDA_ERROR);
    in.observed.message = "cudaErrorInvalidConfiguration: invalid configuration argument";
    v.push_back({"Returned401", in, ProbeClass::kCudaFault, "returned 401: cudaErrorInvalidConfiguration"});
  }
  {
    ProbeInput in = reported(0);
    in.observed.writes = {write(WriteSite::kAddressedRecord, "addressed records", 0, 1752)};
    in.observed.bad_rows = {{BadRowKind::kPositionOutsideTable, "cos_sin_cache", 1, 5, 32, 32, true}};
    v.push_back({"RecordFromOutsideTheTable", in, ProbeClass::kReadOutOfBounds,
                 "row 1 position 32 outside cos_sin_cache's 32 rows, yet slot 5 was written"});
  }
  {
    ProbeInput in = reported(0);
    in.observed.writes = {write(WriteSite::kAddressedRecord, "addressed records", 0, 1752)};
    in.observed.bad_rows = {{BadRowKind::kSlotPastCache, "kv_cache", 0, 32, 3, 32, false}};
    v.push_back({"AcceptedAndSkippedTheBadRow", in, ProbeClass::kWroteInsideRecords,
                 "1752 bytes; row 0 slot 32 past kv_cache's 32 slots: skipped"});
  }
  {
    ProbeInput in = reported(204);
    in.observed.writes = {write(WriteSite::kAddressedRecord, "written by a rejected call (fp8 code)", 600, 3, 1, 1)};
    v.push_back({"RejectedButWroteARecord", in, ProbeClass::kWroteInsideRecords,
                 "3 bytes (after returning 204 kDuplicateSlot)"});
  }
  v.push_back({"AnotherCode", reported(129, {101}), ProbeClass::kRejectedOtherCode,
               "129 kTensorMetaInvalid, expected 101 kKvDtype"});
  v.push_back({"UnsupportedNotDeclared", reported(KVC_STATUS_UNSUPPORTED, {101}), ProbeClass::kRejectedOtherCode,
               "402 unsupported, expected 101 kKvDtype"});
  v.push_back({"TheRulesCode", reported(101, {101}), ProbeClass::kRejectedRightCode, "101 kKvDtype"});
  v.push_back({"UnsupportedOutsideDeclaredSupport", reported(KVC_STATUS_UNSUPPORTED, {101, KVC_STATUS_UNSUPPORTED}),
               ProbeClass::kRejectedRightCode, "402 unsupported"});
  v.push_back({"BadArgumentForANullTensor", reported(KVC_STATUS_BAD_ARGUMENT, {KVC_STATUS_BAD_ARGUMENT}),
               ProbeClass::kRejectedRightCode, "403 bad argument"});
  {
    ProbeInput in = reported(0);
    in.observed.bad_rows = {{BadRowKind::kPositionOutsideTable, "cos_sin_cache", 2, 7, -1, 32, false}};
    v.push_back({"AcceptedWroteNothing", in, ProbeClass::kOkNothingWritten,
                 "returned 0; row 2 position -1 outside cos_sin_cache's 32 rows: skipped"});
  }
  {
    ProbeInput in;
    in.not_sent = "harness rule: the caller's buffers do not cover the case";
    v.push_back({"HarnessRule", in, ProbeClass::kNotSent, "harness rule"});
  }
  return v;
}

class PlantedObservation : public ::testing::TestWithParam<Planted> {};

TEST_P(PlantedObservation, GetsItsClassAndWhere) {
  const Planted& p = GetParam();
  const ProbeVerdict v = classify_probe(p.input);
  EXPECT_EQ(probe_class_key(v.cls), probe_class_key(p.expected)) << v.where;
  EXPECT_NE(v.where.find(p.where_contains), std::string::npos) << "where: " << v.where;
}

INSTANTIATE_TEST_SUITE_P(Classes, PlantedObservation, ::testing::ValuesIn(planted_inputs()),
                         [](const ::testing::TestParamInfo<Planted>& i) { return i.param.name; });

TEST(ProbeClasses, EveryClassHasAPlantedObservation) {
  std::set<ProbeClass> planted;
  for (const Planted& p : planted_inputs()) planted.insert(p.expected);
  for (ProbeClass c : kAllProbeClasses)
    EXPECT_TRUE(planted.count(c)) << probe_class_key(c) << " has no planted observation";
}

TEST(ProbeClasses, KeysRoundTripAndAreDistinct) {
  std::set<std::string> keys, texts;
  for (ProbeClass c : kAllProbeClasses) {
    EXPECT_EQ(probe_class_from_key(probe_class_key(c)), c);
    keys.insert(std::string(probe_class_key(c)));
    texts.insert(std::string(probe_class_text(c)));
  }
  EXPECT_EQ(keys.size(), kAllProbeClasses.size());
  EXPECT_EQ(texts.size(), kAllProbeClasses.size());
  EXPECT_FALSE(probe_class_from_key("passed").has_value());
}

// The worse behaviour wins: a stray write over a fault and a returned code, a fault over a read
// past the table, a read over writes inside the records.
TEST(ProbeClasses, TheWorstBehaviourWins) {
  ProbeInput in = reported(KVC_STATUS_CUDA_ERROR);
  in.observed.cuda_fault = "cudaErrorIllegalAddress";
  in.observed.bad_rows = {{BadRowKind::kPositionOutsideTable, "cos_sin_cache", 1, 5, 32, 32, true}};
  in.observed.writes = {write(WriteSite::kAddressedRecord, "addressed records", 0, 100),
                        write(WriteSite::kOutsideRecords, "foreign slot", 700, 8, -1, 9),
                        write(WriteSite::kGuardZone, "guard before", -4, 4)};
  ProbeVerdict v = classify_probe(in);
  EXPECT_EQ(v.cls, ProbeClass::kWroteOutOfBounds);
  EXPECT_NE(v.where.find("foreign slot +700, 8 bytes and 1 more regions (after returning 401 CUDA error)"),
            std::string::npos)
      << v.where;
  in.observed.writes.resize(1);
  EXPECT_EQ(classify_probe(in).cls, ProbeClass::kCudaFault);
  in.observed.cuda_fault.clear();
  in.observed.status = 0;
  EXPECT_EQ(classify_probe(in).cls, ProbeClass::kReadOutOfBounds);
  in.observed.bad_rows.clear();
  EXPECT_EQ(classify_probe(in).cls, ProbeClass::kWroteInsideRecords);
  // A report comes first: a process that died after it is said beside the call's class.
  in.child = {ChildEnd::kSignaled, 0, SIGABRT, 0, true, ""};
  v = classify_probe(in);
  EXPECT_EQ(v.cls, ProbeClass::kWroteInsideRecords);
  EXPECT_NE(v.where.find("then the process died of signal 6 (SIGABRT)"), std::string::npos) << v.where;
}

TEST(ProbeObservationJson, RoundTripsAndIsFoundAmongOtherOutput) {
  ProbeObservation o;
  o.status = 402;
  o.message = "the op \"x\" is\nnot here";
  o.cuda_fault = "cudaErrorIllegalAddress";
  o.writes = {write(WriteSite::kGuardZone, "guard after", 9, 3, 0, 32),
              ProbeWrite{"layer 1 K pool", WriteSite::kOutsideRecords, "foreign slot", 64, 16, -1, 4}};
  o.bad_rows = {{BadRowKind::kSlotPastCache, "kv_cache", 0, 32, 3, 32, false},
                {BadRowKind::kPositionOutsideTable, "cos_sin_cache", 1, 5, 32, 32, true}};
  const std::string line = std::string(kProbeResultMarker) + probe_observation_to_json(o).dump();
  ProbeObservation back;
  ASSERT_TRUE(find_probe_result("library says hello\n" + line + "\nbye\n", &back));
  EXPECT_EQ(probe_observation_to_json(back), probe_observation_to_json(o));
  EXPECT_EQ(back.writes[1].buffer, "layer 1 K pool");
  EXPECT_TRUE(back.bad_rows[1].record_written);

  EXPECT_FALSE(find_probe_result("no result here\n", &back));
  EXPECT_FALSE(find_probe_result(std::string(kProbeResultMarker) + "{\"status\": 0}\n", &back)) << "fields missing";
  EXPECT_FALSE(find_probe_result(std::string(kProbeResultMarker) + "{not json\n", &back));
  nlohmann::json bad = probe_observation_to_json(o);
  bad["writes"][0]["site"] = "somewhere";
  EXPECT_THROW(probe_observation_from_json(bad), std::invalid_argument);
}

}  // namespace
}  // namespace kvc::testkit
