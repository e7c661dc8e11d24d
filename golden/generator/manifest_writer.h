// manifest_writer.h: one fixture on disk: NAME.bin (the payload) and NAME.json (the manifest).
//
// The manifest's "case" member is written from the shared field list (case_fields.h), member by
// member: a field the generator cannot fill stops it with an error naming the field, so the
// list and the generator cannot drift apart silently. Every range of the payload and the whole
// file get a sha256 (OpenSSL libcrypto). Output is deterministic: the same inputs give the same
// bytes on every machine and torch version, except the "generator" member, which records the
// torch version and probe results of the run.
#pragma once

#include <string>

#include "fixture_catalog.h"
#include "generated_case.h"
#include "probes.h"

namespace kvc::golden_generator {

inline constexpr const char* kGeneratorName = "kvconform-golden";
// Changes when a change to the generator changes any fixture byte.
inline constexpr const char* kGeneratorVersion = "1";

struct RunInfo {
  std::string torch_version;
  ProbeReport probes;
};

// Writes DIR/NAME.json and DIR/NAME.bin; returns the payload size in bytes.
std::size_t write_fixture(const std::string& dir, const FixtureSpec& spec, const GenCase& c,
                          const GenExpected& expected, const RunInfo& run);

}  // namespace kvc::golden_generator
