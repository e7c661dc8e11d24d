// fixture.h: reading a golden fixture (manifest + payload) into an InsertCase and its expected
// bytes.
//
// load_fixture() verifies before it trusts: the manifest's format marker and version, the
// payload's size and sha256, each range's sha256, the contract version and profile, and that the
// case's format is the one the manifest names. Any failure throws CorruptFixtureError: the
// fixture itself is damaged or foreign, which is a different finding from an oracle or kernel
// that disagrees with an intact fixture. A corrupt fixture is restored from version control,
// never regenerated to make a test pass (golden/README.md).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/insert_case.h"

namespace kvc::golden {

enum class FixtureProblem : std::uint8_t {
  kUnreadable,       // a file is missing or cannot be read
  kMalformed,        // not JSON, a missing or mistyped member, an unknown manifest version
  kPayloadSize,      // the payload file is not the size the manifest records
  kHashMismatch,     // the payload's or a range's sha256 differs from the manifest
  kForeignContract,  // written under another contract version or profile
};
const char* problem_name(FixtureProblem p);

class CorruptFixtureError : public std::runtime_error {
 public:
  CorruptFixtureError(FixtureProblem problem, const std::string& fixture, const std::string& detail);
  FixtureProblem problem() const { return problem_; }

 private:
  FixtureProblem problem_;
};

struct Fixture {
  std::string name;
  std::string manifest_path;
  std::string payload_path;
  std::string description;
  std::string record_format;  // "packed584", ...
  std::uint64_t seed = 0;
  nlohmann::json manifest;

  InsertCase c;
  std::uint8_t canary = 0;
  std::vector<std::uint8_t> expected_cache;  // the backing after the op: c.cache.backing_bytes() bytes
  std::vector<std::uint8_t> expected_q_out;  // q_out's bytes (legacy), else empty

  // "torch 1.13.0, generator kvconform-golden 1"
  std::string provenance() const;
};

// Throws CorruptFixtureError.
Fixture load_fixture(const std::string& manifest_path);

// The manifests (NAME.json) in a directory, sorted by name.
std::vector<std::string> fixture_manifests(const std::string& dir);

// Where a payload offset lies: "kv bytes [0, 10240) at offset 37" style, naming the range
// (case tensor or expected output) that contains it, or "" when none does.
std::string payload_range_at(const nlohmann::json& manifest, std::int64_t offset);

}  // namespace kvc::golden
