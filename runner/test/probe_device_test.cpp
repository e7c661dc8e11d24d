// probe_device_test.cpp (GPU): `kvconform probe` against our kernels and the test doubles.
//
// Our kernels: rule breakers of each family sent to the library itself come back rejected with
// the rule's code (metadata rules) or accepted with only the addressed records written and the
// bad row skipped (slot past the cache, position past the table, an index or cache_loc past the
// pool); harness rules are not sent; nothing crashes, faults, or writes or reads out of bounds.
// writes_past_end: its rows past the cache are WROTE OUT OF BOUNDS in the cache's guard zone,
// with the row and slot, and every insert rule is marked not declared enforced.
// reads_outside_cos_sin: its rows past the table are READ OUT OF BOUNDS. zero_block_launch: the
// run fails its zero-token cells with the CUDA error (the probe sends no zero-row call).
// Catches: a probe whose children do not reach the device, a class lost between the child's
// observation and the report, a plant the probe does not see, and a report that blames our kernels.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "testkit/device/device_buffers.h"
#include "testkit/io/case_file.h"
#include "testkit/process/program_run.h"

namespace {

using Command = kvc::testkit::ProgramRun;

#define KVC_REQUIRE_DEVICE()                                              \
  do {                                                                    \
    const std::string reason = ::kvc::testkit::cuda_device_unavailable(); \
    if (!reason.empty()) GTEST_SKIP() << reason;                          \
  } while (0)

Command kvconform(const std::string& args, const std::string& name) {
  const std::string log = ::testing::TempDir() + "kvc-probe-device-" + name + ".log";
  // Our kernels or the double named, not whatever KVC_KERNELS says (the device gate sets it).
  const Command r = kvc::testkit::run_program(KVCONFORM_BINARY, args, log, "env -u KVC_KERNELS");
  const std::size_t tail = r.output.size() > 8000 ? r.output.size() - 8000 : 0;
  std::printf("$ %s\n-> exit %d\n%s\n", r.command.c_str(), r.status, r.output.substr(tail).c_str());
  return r;
}

// cell -> call, from the probe's JSON.
std::map<std::string, nlohmann::json> probe(const std::string& args, const std::string& name) {
  const std::string json = ::testing::TempDir() + "kvc-probe-device-" + name + ".json";
  const Command r = kvconform("probe " + args + " --json '" + json + "'", name);
  EXPECT_EQ(r.status, 0) << "the probe reports; it exits 0 whatever the classes";
  std::map<std::string, nlohmann::json> calls;
  // Kept alive across the loop: a range-for over .at() of the temporary would read freed memory.
  const nlohmann::json report = kvc::testkit::read_json_file(json);
  for (const nlohmann::json& c : report.at("calls")) calls[c.at("cell").get<std::string>()] = c;
  return calls;
}

std::string class_of(const std::map<std::string, nlohmann::json>& calls, const std::string& cell) {
  const auto it = calls.find(cell);
  return it == calls.end() ? "(not in the report)" : it->second.at("class").get<std::string>();
}

const char* const kFormats[] = {"Packed584", "Packed528", "Fp8_512", "Bf16_512"};

TEST(ProbeDevice, OurKernelsRejectOrSkipAndNeverWriteOutOfBounds) {
  KVC_REQUIRE_DEVICE();
  const auto calls = probe(
      "--ops kv_only,legacy,store_rotated,stacked_ctx_kv --rules "
      "KvFloat32,SlotBeyondTheCache,PositionAtMaxPos,BackingTooSmall,IndexAtCapacity,CacheLocBeyondPool,"
      "PositionBeyondTable,XFloat32",
      "ours");
  for (const char* f : kFormats) {
    for (const char* op : {"KvOnly", "Legacy"}) {
      const std::string suffix = std::string("_") + op + "_" + f;
      EXPECT_EQ(class_of(calls, "KvFloat32" + suffix), "rejected_right_code") << suffix;
      EXPECT_EQ(class_of(calls, "SlotBeyondTheCache" + suffix), "wrote_inside_records") << suffix;
      EXPECT_EQ(class_of(calls, "PositionAtMaxPos" + suffix), "wrote_inside_records") << suffix;
      EXPECT_EQ(class_of(calls, "BackingTooSmall" + suffix), "not_sent") << suffix;
    }
  }
  for (const char* cell : {"IndexAtCapacity_packed584_PagedView", "IndexAtCapacity_packed528_SglangFlat",
                           "Stacked_CacheLocBeyondPool", "Stacked_PositionBeyondTable"})
    EXPECT_EQ(class_of(calls, cell), "wrote_inside_records") << cell;
  EXPECT_EQ(class_of(calls, "Stacked_XFloat32"), "rejected_right_code");
  const std::set<std::string> never = {"crashed", "hung", "wrote_out_of_bounds", "cuda_fault", "read_out_of_bounds"};
  for (const auto& [cell, call] : calls) {
    EXPECT_FALSE(never.count(call.at("class").get<std::string>())) << cell << ": " << call.dump();
    EXPECT_TRUE(call.at("declared_enforced").get<bool>()) << cell;
  }
}

TEST(ProbeDevice, WritesPastEndIsCaughtWritingOutOfBounds) {
  KVC_REQUIRE_DEVICE();
  const auto calls = probe(std::string("--kernels '") + KVC_DOUBLE_WRITES_PAST_END +
                               "' --ops kv_only,legacy --rules "
                               "SlotBeyondTheCache,KvFloat32",
                           "writes-past-end");
  for (const char* f : kFormats) {
    for (const char* op : {"KvOnly", "Legacy"}) {
      const std::string cell = std::string("SlotBeyondTheCache_") + op + "_" + f;
      EXPECT_EQ(class_of(calls, cell), "wrote_out_of_bounds") << cell;
      const std::string where = calls.count(cell) ? calls.at(cell).at("where").get<std::string>() : "";
      EXPECT_NE(where.find("kv_cache (backing) guard after"), std::string::npos) << cell << ": " << where;
      EXPECT_NE(where.find("(row 0, slot 32)"), std::string::npos) << cell << ": " << where;
      EXPECT_EQ(class_of(calls, std::string("KvFloat32_") + op + "_" + f), "rejected_right_code");
    }
  }
  for (const auto& [cell, call] : calls) EXPECT_FALSE(call.at("declared_enforced").get<bool>()) << cell;
}

TEST(ProbeDevice, ReadsOutsideCosSinIsCaughtReadingOutOfBounds) {
  KVC_REQUIRE_DEVICE();
  const auto calls = probe(std::string("--kernels '") + KVC_DOUBLE_READS_OUTSIDE_COS_SIN +
                               "' --ops kv_only,legacy --rules PositionAtMaxPos,NegativePosition",
                           "reads-outside-cos-sin");
  for (const char* f : kFormats) {
    for (const char* op : {"KvOnly", "Legacy"}) {
      const std::string cell = std::string("PositionAtMaxPos_") + op + "_" + f;
      EXPECT_EQ(class_of(calls, cell), "read_out_of_bounds") << cell;
      const std::string where = calls.count(cell) ? calls.at(cell).at("where").get<std::string>() : "";
      EXPECT_NE(where.find("position 32 outside cos_sin_cache's 32 rows"), std::string::npos) << where;
      // Negative positions are not planted: skipped as our kernels skip them.
      EXPECT_EQ(class_of(calls, std::string("NegativePosition_") + op + "_" + f), "wrote_inside_records");
    }
  }
}

TEST(ProbeDevice, ZeroBlockLaunchFailsTheRunsZeroTokenCells) {
  KVC_REQUIRE_DEVICE();
  const Command r = kvconform(std::string("run --kernels '") + KVC_DOUBLE_ZERO_BLOCK_LAUNCH +
                                  "' --suites matrix --ops kv_only --formats packed584 --max-tokens 1",
                              "zero-block-launch");
  EXPECT_EQ(r.status, 1) << "the zero-token cells fail";
  EXPECT_NE(r.output.find("Tokens0"), std::string::npos);
  EXPECT_NE(r.output.find("cudaErrorInvalid"), std::string::npos);
}

}  // namespace
