// fixture.cpp: verified reading of golden fixtures (see fixture.h).
#include "kvc/golden/fixture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "kvc/contract.h"
#include "kvc/golden/manifest_schema.h"
#include "kvc/golden/sha256.h"
#include "kvc/resolved_case.h"
#include "kvc/case_fields.h"
#include "testkit/io/case_fields_io.h"

namespace kvc::golden {
namespace {

using nlohmann::json;
namespace mf = manifest;
namespace cf = testkit::case_fields;

std::string key(std::string_view k) { return std::string(k); }

const json& member(const json& j, std::string_view name, const std::string& where) {
  if (!j.is_object() || !j.contains(key(name)))
    throw std::runtime_error(where + " has no member \"" + key(name) + "\"");
  return j.at(key(name));
}

struct Range {
  std::int64_t offset = 0;
  std::int64_t size = 0;
  std::string sha256;
};

Range range_of(const json& j, const std::string& where) {
  Range r;
  r.offset = member(j, mf::kOffset, where).get<std::int64_t>();
  r.size = member(j, mf::kSize, where).get<std::int64_t>();
  r.sha256 = member(j, mf::kSha256, where).get<std::string>();
  if (r.offset < 0 || r.size < 0) throw std::runtime_error(where + ": negative offset or size");
  return r;
}

// Every payload range the manifest names, with a label: "case.kv", "expected.cache", ...
std::vector<std::pair<std::string, Range>> ranges_of(const json& m) {
  std::vector<std::pair<std::string, Range>> out;
  const json& c = member(m, mf::kCase, "manifest");
  for (const cf::Field& f : cf::kInsertCaseFields) {
    if (f.kind != cf::Kind::kTensor) continue;
    const json& t = member(c, f.name, "case");
    if (!t.is_null())
      out.emplace_back("case." + key(f.name), range_of(member(t, mf::kPayloadRange, key(f.name)), key(f.name)));
  }
  const json& e = member(m, mf::kExpected, "manifest");
  out.emplace_back("expected.cache", range_of(member(e, mf::kExpectedCache, "expected"), "expected.cache"));
  const json& q = member(e, mf::kExpectedQOut, "expected");
  if (!q.is_null()) out.emplace_back("expected.q_out", range_of(q, "expected.q_out"));
  return out;
}

std::vector<std::uint8_t> slice(const std::vector<std::uint8_t>& payload, const Range& r, const std::string& label) {
  if (r.offset + r.size > static_cast<std::int64_t>(payload.size()))
    throw std::runtime_error(label + " lies past the end of the payload");
  return std::vector<std::uint8_t>(payload.begin() + r.offset, payload.begin() + r.offset + r.size);
}

}  // namespace

const char* problem_name(FixtureProblem p) {
  switch (p) {
    case FixtureProblem::kUnreadable: return "unreadable";
    case FixtureProblem::kMalformed: return "malformed manifest";
    case FixtureProblem::kPayloadSize: return "payload size mismatch";
    case FixtureProblem::kHashMismatch: return "sha256 mismatch";
    case FixtureProblem::kForeignContract: return "foreign contract version or profile";
  }
  return "?";
}

CorruptFixtureError::CorruptFixtureError(FixtureProblem problem, const std::string& fixture, const std::string& detail)
    : std::runtime_error("CORRUPT FIXTURE " + fixture + " (" + problem_name(problem) + "): " + detail +
                         ". The fixture is damaged, not the code under test: restore it from version control "
                         "(git checkout -- golden/fixtures); never regenerate fixtures to make a test pass "
                         "(golden/README.md)"),
      problem_(problem) {}

std::string Fixture::provenance() const {
  const json g = manifest.value(key(mf::kGenerator), json::object());
  return "generator " + g.value(key(mf::kGeneratorName), std::string("?")) + " " +
         g.value(key(mf::kGeneratorVersion), std::string("?")) + ", torch " +
         g.value(key(mf::kTorchVersion), std::string("?"));
}

namespace {

// What the manifest says of the payload: its size and hash, and its labelled ranges.
struct PayloadManifest {
  Range whole;
  std::vector<std::pair<std::string, Range>> ranges;
};

// The manifest (JSON of this format version, this contract and profile) and its fields.
PayloadManifest read_manifest(Fixture& f) {
  std::ifstream in(f.manifest_path);
  if (!in) throw CorruptFixtureError(FixtureProblem::kUnreadable, f.name, "cannot read " + f.manifest_path);
  try {
    f.manifest = json::parse(in);
  } catch (const json::exception& e) {
    throw CorruptFixtureError(FixtureProblem::kMalformed, f.name, std::string("not JSON: ") + e.what());
  }
  PayloadManifest pm;
  try {
    const json& m = f.manifest;
    if (!m.is_object() || !m.contains(key(mf::kFormatKey)) || m.at(key(mf::kFormatKey)) != mf::kFormatVersion)
      throw std::runtime_error("not a version " + std::to_string(mf::kFormatVersion) + " kvconform golden manifest");
    const int version = member(m, mf::kContractVersion, "manifest").get<int>();
    const std::string profile = member(m, mf::kProfile, "manifest").get<std::string>();
    // Version 3 changed only the stacked op: fixtures of versions 2 and 3 mean the same.
    if (version < kInsertMeaningSinceVersion || version > kContractVersion || profile != mf::kProfileValue)
      throw CorruptFixtureError(FixtureProblem::kForeignContract, f.name,
                                "written under contract version " + std::to_string(version) + ", profile " + profile +
                                    "; this build checks version " + std::to_string(kContractVersion) + ", profile " +
                                    key(mf::kProfileValue));
    f.description = member(m, mf::kDescription, "manifest").get<std::string>();
    f.record_format = member(m, mf::kRecordFormat, "manifest").get<std::string>();
    f.seed = member(m, mf::kSeed, "manifest").get<std::uint64_t>();
    f.canary = member(member(m, mf::kExpected, "manifest"), mf::kCanary, "expected").get<std::uint8_t>();
    const json& p = member(m, mf::kPayload, "manifest");
    pm.whole.size = member(p, mf::kSize, "payload").get<std::int64_t>();
    pm.whole.sha256 = member(p, mf::kSha256, "payload").get<std::string>();
    f.payload_path =
        (std::filesystem::path(f.manifest_path).parent_path() / member(p, mf::kFile, "payload").get<std::string>())
            .string();
    pm.ranges = ranges_of(m);
  } catch (const CorruptFixtureError&) {
    throw;
  } catch (const std::exception& e) {
    throw CorruptFixtureError(FixtureProblem::kMalformed, f.name, e.what());
  }
  return pm;
}

// The payload, of the size and sha256 the manifest records (a mismatch names the damaged ranges).
std::vector<std::uint8_t> read_payload(const Fixture& f, const PayloadManifest& pm) {
  std::ifstream bin(f.payload_path, std::ios::binary);
  if (!bin) throw CorruptFixtureError(FixtureProblem::kUnreadable, f.name, "cannot read payload " + f.payload_path);
  std::vector<std::uint8_t> payload(std::istreambuf_iterator<char>(bin), std::istreambuf_iterator<char>{});
  if (static_cast<std::int64_t>(payload.size()) != pm.whole.size)
    throw CorruptFixtureError(FixtureProblem::kPayloadSize, f.name,
                              f.payload_path + " holds " + std::to_string(payload.size()) +
                                  " bytes, the manifest says " + std::to_string(pm.whole.size));
  if (const std::string actual = sha256_hex(payload); actual != pm.whole.sha256) {
    std::string damaged;
    for (const auto& [label, r] : pm.ranges) {
      if (r.offset + r.size > static_cast<std::int64_t>(payload.size())) continue;
      if (sha256_hex(payload.data() + r.offset, static_cast<std::size_t>(r.size)) != r.sha256)
        damaged += (damaged.empty() ? "" : ", ") + label + " [" + std::to_string(r.offset) + ", " +
                   std::to_string(r.offset + r.size) + ")";
    }
    throw CorruptFixtureError(FixtureProblem::kHashMismatch, f.name,
                              "payload " + f.payload_path + " has sha256 " + actual + ", the manifest records " +
                                  pm.whole.sha256 + "; damaged ranges: " + (damaged.empty() ? "none found" : damaged));
  }
  return payload;
}

// The case (its tensors' bytes sliced from the payload, each range checked against its hash) and
// the expected bytes, checked against the format and sizes the case implies.
void read_case(Fixture& f, const std::vector<std::uint8_t>& payload, const PayloadManifest& pm) {
  try {
    const auto codec = testkit::TensorBytesCodec{
        [](std::string_view, const HostTensor&, json&) {
          throw std::logic_error("fixtures are written by the generator");
        },
        [&](std::string_view field, const json& object) {
          const std::string label = "case." + key(field);
          const Range r = range_of(member(object, mf::kPayloadRange, label), label);
          std::vector<std::uint8_t> bytes = slice(payload, r, label);
          if (sha256_hex(bytes) != r.sha256)
            throw CorruptFixtureError(FixtureProblem::kHashMismatch, f.name, label + " does not match its sha256");
          return bytes;
        }};
    f.c = testkit::insert_case_fields_from_json(member(f.manifest, mf::kCase, "manifest"), codec);
    for (const auto& [label, r] : pm.ranges) {
      if (label == "expected.cache") f.expected_cache = slice(payload, r, label);
      if (label == "expected.q_out") f.expected_q_out = slice(payload, r, label);
    }
    const std::optional<ResolvedInsertCase> resolved = resolve(f.c);
    if (!resolved || resolved->layout.name != f.record_format)
      throw std::runtime_error("the case's cache is not the format \"" + f.record_format + "\" the manifest names");
    if (static_cast<std::int64_t>(f.expected_cache.size()) != f.c.cache.backing_bytes())
      throw std::runtime_error("expected.cache holds " + std::to_string(f.expected_cache.size()) +
                               " bytes, the cache's backing " + std::to_string(f.c.cache.backing_bytes()));
    const std::int64_t q_bytes = f.c.op == InsertOp::kLegacy ? f.c.q_out.span_bytes() : 0;
    if (static_cast<std::int64_t>(f.expected_q_out.size()) != q_bytes)
      throw std::runtime_error("expected.q_out holds " + std::to_string(f.expected_q_out.size()) + " bytes, q_out " +
                               std::to_string(q_bytes));
  } catch (const CorruptFixtureError&) {
    throw;
  } catch (const std::exception& e) {
    throw CorruptFixtureError(FixtureProblem::kMalformed, f.name, e.what());
  }
}

}  // namespace

Fixture load_fixture(const std::string& manifest_path) {
  Fixture f;
  f.manifest_path = manifest_path;
  f.name = std::filesystem::path(manifest_path).stem().string();
  const PayloadManifest pm = read_manifest(f);
  read_case(f, read_payload(f, pm), pm);
  return f;
}

std::vector<std::string> fixture_manifests(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == mf::kManifestSuffix)
      out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string payload_range_at(const json& manifest, std::int64_t offset) {
  try {
    for (const auto& [label, r] : ranges_of(manifest))
      if (offset >= r.offset && offset < r.offset + r.size)
        return label + " [" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.size) + "), byte " +
               std::to_string(offset - r.offset) + " of it";
  } catch (const std::exception&) {
  }
  return {};
}

}  // namespace kvc::golden
