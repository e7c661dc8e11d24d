// probe_observation.h: what the probe's child process saw of one call to a kernel library, as
// plain facts: the status and message, a sticky CUDA error, every region of every buffer the call
// changed (located: an addressed record, outside the records, a guard zone, an input), and the
// rows that broke a value rule (a slot past the cache, a position outside the table) with whether
// their record was written. The child prints it as one JSON line; classify_probe.h turns it into
// a class. Kept free of CUDA so that the classifier and its tests run anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvc::testkit {

// Where changed bytes lie, from the call's point of view.
enum class WriteSite : std::uint8_t {
  kAddressedRecord = 0,  // a record (or an output row) the call addresses
  kOutsideRecords = 1,   // an output's byte outside them: page padding, a row gap, a foreign slot, past the view
  kGuardZone = 2,        // the guard zone before or after a buffer: outside the memory the call was given
  kInput = 3,            // an input's payload
};

// One run of changed bytes in one buffer (a region of a damage report, or of a before/after diff).
struct ProbeWrite {
  std::string buffer;  // "kv_cache (backing)", "cos_sin_cache", "layer 1 K pool"
  WriteSite site = WriteSite::kAddressedRecord;
  std::string what;         // "guard after", "page padding", "foreign slot", "fp8 code", "input changed"
  std::int64_t offset = 0;  // first changed byte, from the payload start (negative: the guard before)
  std::int64_t bytes = 0;   // changed bytes in the run (the region's count for damage reports)
  std::int64_t row = -1;    // the case row whose record lies there (or would, for a slot past the cache)
  std::int64_t slot = -1;
};

// A row of the case that breaks a value rule.
enum class BadRowKind : std::uint8_t {
  kSlotPastCache = 0,         // slot >= num_blocks * block_size (pool rows, for the stacked op)
  kPositionOutsideTable = 1,  // position < 0 or >= the cos/sin table's rows, with a slot inside the cache
};

struct BadRow {
  BadRowKind kind = BadRowKind::kSlotPastCache;
  std::string table;  // the table or cache the limit is of: "cos_sin_cache", "kv_cache", "layer 1 cos_sin"
  std::int64_t row = 0;
  std::int64_t slot = 0;
  std::int64_t position = 0;
  std::int64_t limit = 0;       // the cache's slots, or the table's rows
  bool record_written = false;  // kPositionOutsideTable: the record at `slot` changed
};

struct ProbeObservation {
  int status = 0;                  // what the entry point returned
  std::string message;             // its error text
  std::string cuda_fault;          // the synchronise after the call failed: the sticky CUDA error; "" when none
  std::vector<ProbeWrite> writes;  // the addressed records' writes summed per buffer; every other run listed
  std::vector<BadRow> bad_rows;
};

nlohmann::json probe_observation_to_json(const ProbeObservation& o);
// Throws std::invalid_argument (naming the key) on a malformed object.
ProbeObservation probe_observation_from_json(const nlohmann::json& j);

// The marker of the child's result line: "kvc-probe-result: {...}".
inline constexpr const char* kProbeResultMarker = "kvc-probe-result: ";
// The observation in the last result line of `output`, if any (a library may print too).
bool find_probe_result(const std::string& output, ProbeObservation* out);

}  // namespace kvc::testkit
