// golden_regenerate_test.cpp (label golden; built with kvconform-golden): regenerating the
// fixtures into a temporary directory gives the committed bytes.
//
// Runs the generator (its probes included: a torch whose semantics differ fails here, naming
// the probe), then requires the same set of fixtures, byte-identical payloads, and identical
// manifests apart from the "generator" member (which records the torch version and probe results
// of the run). A difference names the fixture, the first differing payload offset and the range
// it lies in. Catches a generator change, or a torch version, that moves a fixture byte.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "kvc/golden/fixture.h"
#include "kvc/golden/manifest_schema.h"

namespace kvc {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  for (const std::string& m : golden::fixture_manifests(dir)) names.insert(fs::path(m).stem().string());
  return names;
}

TEST(GoldenRegeneration, RegeneratingGivesTheCommittedBytes) {
  const fs::path out = fs::temp_directory_path() / ("kvc_golden_regenerated_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  const std::string log = (out / "generator.log").string();
  const std::string command =
      std::string("\"") + KVC_GOLDEN_GENERATOR_PATH + "\" --out \"" + out.string() + "\" > \"" + log + "\" 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream log_file(log);
  const std::string log_text((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  std::printf("%s", log_text.c_str());
  ASSERT_EQ(rc, 0) << "kvconform-golden failed:\n" << log_text;

  const std::string committed_dir = KVC_GOLDEN_FIXTURE_DIR;
  const std::set<std::string> committed = names_in(committed_dir), regenerated = names_in(out.string());
  for (const std::string& n : committed)
    EXPECT_TRUE(regenerated.count(n)) << n << " is committed but the generator no longer makes it";
  for (const std::string& n : regenerated) EXPECT_TRUE(committed.count(n)) << n << " is generated but not committed";

  const std::string generator_key(golden::manifest::kGenerator);
  for (const std::string& n : committed) {
    if (!regenerated.count(n)) continue;
    nlohmann::json a = read_json(committed_dir + "/" + n + ".json"), b = read_json((out / (n + ".json")).string());
    if (n == *committed.begin())
      std::printf("committed with %s; regenerated with %s\n", a.at(generator_key).dump().c_str(),
                  b.at(generator_key).dump().c_str());
    a.erase(generator_key);
    b.erase(generator_key);
    EXPECT_EQ(a, b) << n << ": manifests differ (JSON patch from committed to regenerated): "
                    << nlohmann::json::diff(a, b).dump();
    const std::vector<std::uint8_t> pa = read_bytes(committed_dir + "/" + n + ".bin"),
                                    pb = read_bytes((out / (n + ".bin")).string());
    if (pa == pb) continue;
    std::size_t first = 0, count = 0;
    const std::size_t common = std::min(pa.size(), pb.size());
    for (std::size_t i = common; i-- > 0;)
      if (pa[i] != pb[i]) {
        first = i;
        ++count;
      }
    ADD_FAILURE() << n << ": payloads differ (" << pa.size() << " vs " << pb.size() << " bytes, " << count
                  << " differing bytes in common); first at offset " << first << ": "
                  << golden::payload_range_at(a, static_cast<std::int64_t>(first)) << ", committed 0x" << std::hex
                  << static_cast<int>(first < pa.size() ? pa[first] : 0) << ", regenerated 0x"
                  << static_cast<int>(first < pb.size() ? pb[first] : 0);
  }
  if (!HasFailure()) fs::remove_all(out);
}

}  // namespace
}  // namespace kvc
