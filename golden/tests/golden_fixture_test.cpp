// golden_fixture_test.cpp (CPU, labels cpu and golden): the frozen fixtures against the oracle.
//
// - OracleReproducesFixture/<name>: the oracle, run on each fixture's case, writes the frozen
//   backing and q_out byte for byte. Catches any change to the oracle that moves a byte, and
//   any disagreement between the oracle and the independent torch generator.
// - GoldenFixtures: manifests and sha256s verify and record their provenance; the catalog covers
//   every op x format x flag the contract defines; the inputs hold every edge class and the
//   expected bytes every edge outcome (anti-vacuity: a catalog that lost them fails here).
// - FixturesCatch: the oracle's planted mutants, and the oracle run under each policy of another
//   profile while declaring the contract's, each differ from some fixture (the exponent rule
//   cannot differ: every amax is a 16-bit value, docs/contract.md §2.3).
// - CorruptFixture: one flipped payload byte in a temporary copy is reported as a corrupt
//   fixture naming the damaged range, before any backend runs; the same byte flipped past the
//   hash check would have been an oracle failure, so the distinction is real.
// - FixtureComparator: a planted cache byte and q_out byte are reported with page, slot, field,
//   expected and actual bytes and decoded values.
// - SharedFieldList: case files and fixture manifests describe a case with exactly the members
//   of testkit/case_fields.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kvc/golden/fixture.h"
#include "kvc/golden/fixture_check.h"
#include "kvc/golden/manifest_schema.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "kvc/case_fields.h"
#include "testkit/io/case_file.h"
#include "testkit/planted/planted_backends.h"

namespace kvc {
namespace {

namespace fs = std::filesystem;
namespace cf = testkit::case_fields;

constexpr std::int64_t kMaxTotalPayloadBytes = 4 << 20;  // "a few MB at most"

std::vector<std::string> manifests() { return golden::fixture_manifests(KVC_GOLDEN_FIXTURE_DIR); }

std::vector<golden::Fixture> all_fixtures() {
  std::vector<golden::Fixture> out;
  for (const std::string& m : manifests()) out.push_back(golden::load_fixture(m));
  return out;
}

std::string test_name(const std::string& manifest_path) {
  std::string s = fs::path(manifest_path).stem().string();
  for (char& ch : s)
    if (ch == '.') ch = '_';
  return s;
}

// ---- the oracle reproduces every fixture ----------------------------------------------------

class OracleReproducesFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleReproducesFixture, Bytes) {
  const golden::Fixture f = golden::load_fixture(GetParam());
  testkit::OracleBackend oracle;
  const golden::FixtureCheck check = golden::check_fixture(f, oracle);
  EXPECT_EQ(check.verdict, golden::Verdict::kReproduced) << f.name << " (" << f.description << ")\n" << check.report;
}

INSTANTIATE_TEST_SUITE_P(Golden, OracleReproducesFixture, ::testing::ValuesIn(manifests()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OracleReproducesFixture);  // an empty directory fails below

// ---- manifests, coverage, edge classes ------------------------------------------------------

TEST(GoldenFixtures, ManifestsAndHashesVerifyAndRecordTheirProvenance) {
  const auto paths = manifests();
  ASSERT_FALSE(paths.empty()) << "no fixtures in " << KVC_GOLDEN_FIXTURE_DIR;
  std::int64_t total = 0;
  for (const std::string& p : paths) {
    const golden::Fixture f = golden::load_fixture(p);  // throws CorruptFixtureError on any hash mismatch
    const nlohmann::json& g = f.manifest.at(std::string(golden::manifest::kGenerator));
    EXPECT_EQ(g.at("name"), "kvconform-golden") << f.name;
    EXPECT_FALSE(g.at("torch_version").get<std::string>().empty()) << f.name;
    EXPECT_FALSE(g.at("probes").empty()) << f.name << ": no probe results recorded";
    EXPECT_GE(f.manifest.at("contract_version").get<int>(), kInsertMeaningSinceVersion) << f.name;
    EXPECT_LE(f.manifest.at("contract_version").get<int>(), kContractVersion) << f.name;
    total += static_cast<std::int64_t>(fs::file_size(f.payload_path) + fs::file_size(f.manifest_path));
  }
  std::printf("%zu fixtures, %lld bytes on disk (limit %lld)\n", paths.size(), static_cast<long long>(total),
              static_cast<long long>(kMaxTotalPayloadBytes));
  EXPECT_LE(total, kMaxTotalPayloadBytes);
}

TEST(GoldenFixtures, CoverEveryOpFormatAndFlag) {
  std::set<std::string> have;
  for (const golden::Fixture& f : all_fixtures()) {
    const InsertCase& c = f.c;
    const ResolvedInsertCase resolved = resolve_or_throw(c);
    const std::string fmt = std::string(resolved.layout.name);
    const bool f16 = c.kv.meta.dtype == DType::kF16;
    if (c.op == InsertOp::kKvOnly) {
      have.insert("kv_only " + fmt + (c.kv_norm_weight.present ? " kv_norm" : ""));
      continue;
    }
    if (resolved.packed()) {
      const std::int64_t hp = c.padded_heads();
      have.insert("legacy " + fmt + " hp" + std::to_string(hp));
      if (hp > 0 && !c.apply_q_norm) have.insert("legacy " + fmt + " no_q_norm");
      if (hp > 0 && !c.apply_q_rope) have.insert("legacy " + fmt + " no_q_rope");
      if (hp > 0 && c.q_interleaved) have.insert("legacy " + fmt + " interleaved");
      if (hp > 0 && f16) have.insert("legacy " + fmt + " f16");
    } else {
      have.insert("legacy " + fmt + (c.apply_q_norm ? " q_norm" : " no_q_norm") + (f16 ? " f16" : ""));
    }
  }
  std::vector<std::string> want;
  for (const char* f : {"packed584", "packed528", "fp8_512", "bf16_512"}) {
    want.push_back(std::string("kv_only ") + f);
    want.push_back(std::string("kv_only ") + f + " kv_norm");
  }
  for (const char* f : {"packed584", "packed528"})
    for (const char* v : {" hp0", " hp8", " hp64", " no_q_norm", " no_q_rope", " interleaved", " f16"})
      want.push_back(std::string("legacy ") + f + v);
  for (const char* v : {"legacy fp8_512 q_norm", "legacy fp8_512 no_q_norm", "legacy fp8_512 q_norm f16",
                        "legacy bf16_512 q_norm", "legacy bf16_512 no_q_norm"})
    want.push_back(v);
  for (const std::string& w : want) EXPECT_TRUE(have.count(w)) << "no fixture covers: " << w;
}

// The fixtures that a backend does not reproduce.
std::vector<std::string> differing_fixtures(testkit::Backend& backend) {
  std::vector<std::string> out;
  for (const golden::Fixture& f : all_fixtures())
    if (golden::check_fixture(f, backend).verdict == golden::Verdict::kDiffers) out.push_back(f.name);
  return out;
}

TEST(FixturesCatch, TheOraclesPlantedMutants) {
  for (const oracle::OracleMutation m :
       {oracle::OracleMutation::kScalePadOne, oracle::OracleMutation::kTiesAwayFromZero}) {
    oracle::OracleOptions options;
    options.mutation = m;
    testkit::OracleBackend mutant(options);
    const auto caught = differing_fixtures(mutant);
    std::printf("%s: %zu fixtures differ\n", mutant.name().c_str(), caught.size());
    EXPECT_FALSE(caught.empty()) << mutant.name() << " reproduces every fixture";
  }
}

TEST(FixturesCatch, EveryOtherPolicyDeclaredAsTheContracts) {
  for (const kvc::Policy policy : kvc::kAllPolicies) {
    if (policy == kvc::Policy::kRsqrt) continue;  // the oracle always rounds rsqrt correctly
    const kvc::Profile runs = kvc::with_alternative(kvc::vllm_profile(), policy, 1);
    testkit::PlantedBackend planted(runs, kvc::vllm_profile());
    const auto caught = differing_fixtures(planted);
    std::printf("%-12s %s: %zu fixtures differ\n", std::string(kvc::policy_title(policy)).c_str(),
                std::string(kvc::alternative_name(policy, 1)).c_str(), caught.size());
    if (policy == kvc::Policy::kExponent)
      EXPECT_TRUE(caught.empty()) << "the exact exponent rule differs from the device log2f on a fixture, which "
                                     "docs/contract.md §2.3 rules out for 16-bit amax";
    else
      EXPECT_FALSE(caught.empty()) << "no fixture tells " << kvc::policy_title(policy) << " "
                                   << kvc::alternative_name(policy, 1) << " from the contract's";
  }
}

bool is_nan16(std::uint16_t v, bool f16) {
  return f16 ? (v & 0x7C00) == 0x7C00 && (v & 0x03FF) != 0 : (v & 0x7F80) == 0x7F80 && (v & 0x007F) != 0;
}
bool is_quiet16(std::uint16_t v, bool f16) { return (v & (f16 ? 0x0200 : 0x0040)) != 0; }
bool is_inf16(std::uint16_t v, bool f16) { return (v & 0x7FFF) == (f16 ? 0x7C00 : 0x7F80); }
bool is_subnormal16(std::uint16_t v, bool f16) { return (v & (f16 ? 0x7C00 : 0x7F80)) == 0 && (v & 0x7FFF) != 0; }
int exponent16(std::uint16_t v, bool f16) { return f16 ? ((v >> 10) & 0x1F) - 15 : ((v >> 7) & 0xFF) - 127; }
// 448·2^k = 1.75·2^(8+k): the 16-bit pattern's magnitude for the given exponent.
std::uint16_t fp8_max_pow2(int k, bool f16) {
  return static_cast<std::uint16_t>(f16 ? ((15 + 8 + k) << 10) | 0x300 : ((127 + 8 + k) << 7) | 0x60);
}

TEST(GoldenFixtures, InputsHoldEveryEdgeClassAndExpectationsEveryEdgeOutcome) {
  std::map<std::string, int> hits;
  for (const golden::Fixture& f : all_fixtures()) {
    const InsertCase& c = f.c;
    const bool f16 = c.kv.meta.dtype == DType::kF16;
    const RecordFormat format = resolve_or_throw(c).format;
    const oracle::PagedCacheView view = testkit::view_of(c);
    if (f16) ++hits["kv:f16"];
    if (c.num_inserted() < c.num_rows()) ++hits["dp-padding rows"];
    if (view.page_stride_bytes > layout_of(format).dense_page_bytes(c.cache.block_size) && !is_packed(format))
      ++hits["padded pages (full cache)"];
    if (view.page_stride_bytes > layout_of(format).dense_page_bytes(c.cache.block_size) && is_packed(format))
      ++hits["padded pages (packed)"];
    if (!is_packed(format) && view.token_stride_bytes > layout_of(format).record_bytes()) ++hits["row gaps"];
    std::vector<std::uint8_t> backing = f.expected_cache;
    for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
      const std::int64_t slot = c.slots.load<std::int64_t>(t);
      if (slot == -1) ++hits["slot -1"];
      if (slot == -(std::int64_t{1} << 62)) ++hits["slot -2^62"];
      if (slot < 0) continue;
      bool all_subnormal = true, all_huge = true;
      for (int seg = 0; seg < kHeadDim / 32; ++seg) {
        std::uint16_t max_mag = 0;
        bool all_zero = true;
        for (int d = seg * 32; d < seg * 32 + 32; ++d) {
          const std::uint16_t v = c.kv.load<std::uint16_t>(t * kHeadDim + d);
          const std::string where = d < kNopeDim ? " (NoPE)" : " (RoPE)";
          if (is_nan16(v, f16)) ++hits[(is_quiet16(v, f16) ? "quiet NaN" : "signalling NaN") + where];
          if (is_inf16(v, f16)) ++hits[std::string(v & 0x8000 ? "-Inf" : "+Inf") + where];
          if (v == 0x8000) ++hits["-0" + where];
          if (is_subnormal16(v, f16)) ++hits["subnormal" + where];
          all_subnormal = all_subnormal && is_subnormal16(v, f16);
          all_huge = all_huge && !is_nan16(v, f16) && !is_inf16(v, f16) && exponent16(v, f16) >= (f16 ? 15 : 127);
          all_zero = all_zero && (v & 0x7FFF) == 0;
          if (!is_nan16(v, f16) && !is_inf16(v, f16)) max_mag = std::max<std::uint16_t>(max_mag, v & 0x7FFF);
        }
        if (all_zero) ++hits["zero block"];
        for (int k = -20; k <= 20; ++k) {
          const std::uint16_t p = fp8_max_pow2(k, f16);
          if (f16 && (k < -10 || k > 7)) continue;
          if (max_mag == p) ++hits["amax = 448*2^k"];
          if (max_mag == p + 1) ++hits["amax = 448*2^k + 1 ulp"];
          if (max_mag == p - 1) ++hits["amax = 448*2^k - 1 ulp"];
        }
      }
      if (all_subnormal) ++hits["tiny row (all subnormal)"];
      if (all_huge) ++hits["huge row (max exponent)"];
      // Outcomes in the frozen bytes.
      const oracle::DecodedRecord r = oracle::decode_record(backing, view, slot);
      for (int b = 0; b < layout_of(format).scale_blocks; ++b) {
        if (r.scales[static_cast<std::size_t>(b)] == 0xFF) ++hits["scale 0xff (Inf block)"];
        if (r.scales[static_cast<std::size_t>(b)] == 105) ++hits["scale 105 (zero block)"];
      }
      for (int d = 0; d < layout_of(format).fp8_dims; ++d)
        if (r.codes[static_cast<std::size_t>(d)] == 0xFE) ++hits["code 0xfe"];
      if (format == RecordFormat::kBf16_512 || format == RecordFormat::kPacked584)
        for (int d = format == RecordFormat::kBf16_512 ? 0 : kNopeDim; d < kHeadDim; ++d)
          if (r.values16[static_cast<std::size_t>(d)] == 0x7FFF) ++hits["16-bit 0x7fff (NaN stored)"];
    }
  }
  for (const auto& [name, n] : hits) std::printf("  %-32s %d\n", name.c_str(), n);
  for (const char* required : {"kv:f16",
                               "dp-padding rows",
                               "padded pages (packed)",
                               "padded pages (full cache)",
                               "row gaps",
                               "slot -1",
                               "slot -2^62",
                               "quiet NaN (NoPE)",
                               "signalling NaN (NoPE)",
                               "quiet NaN (RoPE)",
                               "signalling NaN (RoPE)",
                               "+Inf (NoPE)",
                               "-Inf (NoPE)",
                               "+Inf (RoPE)",
                               "-Inf (RoPE)",
                               "-0 (NoPE)",
                               "-0 (RoPE)",
                               "subnormal (NoPE)",
                               "subnormal (RoPE)",
                               "zero block",
                               "amax = 448*2^k",
                               "amax = 448*2^k + 1 ulp",
                               "amax = 448*2^k - 1 ulp",
                               "tiny row (all subnormal)",
                               "huge row (max exponent)",
                               "scale 0xff (Inf block)",
                               "scale 105 (zero block)",
                               "code 0xfe",
                               "16-bit 0x7fff (NaN stored)"})
    EXPECT_GT(hits[required], 0) << "no fixture holds the edge class: " << required;
}

TEST(SharedFieldList, CaseFilesAndManifestsHaveExactlyTheListedMembers) {
  std::set<std::string> listed;
  for (const cf::Field& f : cf::kInsertCaseFields) listed.insert(std::string(f.name));
  for (const golden::Fixture& f : all_fixtures()) {
    std::set<std::string> in_manifest;
    for (const auto& [k, v] : f.manifest.at("case").items()) in_manifest.insert(k);
    EXPECT_EQ(in_manifest, listed) << f.name;
    // The same case through the case-file serializer: the list plus the file's own members.
    std::set<std::string> in_case_file;
    const nlohmann::json case_file = testkit::case_to_json(f.c);
    for (const auto& [k, v] : case_file.items()) in_case_file.insert(k);
    in_case_file.erase("contract_version");
    in_case_file.erase("profile");
    EXPECT_EQ(in_case_file, listed) << f.name;
    // And back: the case file of a fixture's case is the fixture's case.
    const InsertCase again = testkit::case_from_json(testkit::case_to_json(f.c));
    EXPECT_EQ(testkit::case_to_json(again), testkit::case_to_json(f.c)) << f.name;
  }
}

TEST(SharedFieldList, EveryListedMemberIsReadIntoTheCase) {
  // Two fixtures between them hold every optional tensor (fp8 scales, q, kv_norm weight).
  int changed = 0;
  for (const char* name : {"legacy.fp8_512", "kv_only.packed584.kv_norm"}) {
    const golden::Fixture f = golden::load_fixture(std::string(KVC_GOLDEN_FIXTURE_DIR) + "/" + name + ".json");
    const nlohmann::json original = testkit::case_to_json(f.c);
    for (const cf::Field& field : cf::kInsertCaseFields) {
      const std::string k(field.name);
      nlohmann::json j = original;
      nlohmann::json& v = j[k];
      if (v.is_null()) continue;
      switch (field.kind) {
        case cf::Kind::kOp: v = v == "legacy" ? "kv_only" : "legacy"; break;
        case cf::Kind::kTensor:
        case cf::Kind::kTensorMeta: {
          nlohmann::json& meta = field.kind == cf::Kind::kTensor ? v["meta"] : v;
          meta["offset_bytes"] = meta["offset_bytes"].get<std::int64_t>() + 16;
          break;
        }
        case cf::Kind::kCacheGeometry: v["num_blocks"] = v["num_blocks"].get<std::int64_t>() + 1; break;
        case cf::Kind::kInt: v = v.get<std::int64_t>() + 1; break;
        case cf::Kind::kBool: v = !v.get<bool>(); break;
        case cf::Kind::kFloat: v = v.get<float>() * 2; break;
      }
      const nlohmann::json again = testkit::case_to_json(testkit::case_from_json(j));
      EXPECT_EQ(again.at(k), j.at(k)) << name << ": member \"" << k << "\" was not read into the case";
      EXPECT_NE(again.at(k), original.at(k)) << name << ": member \"" << k << "\" did not change";
      ++changed;
    }
  }
  EXPECT_GE(changed, static_cast<int>(cf::kInsertCaseFields.size())) << "some listed member was never exercised";
}

// ---- corrupt fixtures -----------------------------------------------------------------------

class CorruptFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto paths = manifests();
    ASSERT_FALSE(paths.empty());
    source_ = paths.front();
    dir_ = fs::temp_directory_path() /
           ("kvc_golden_corrupt_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    intact_ = golden::load_fixture(source_);
    copy_ = (dir_ / fs::path(source_).filename()).string();
    fs::copy_file(source_, copy_);
    payload_copy_ = (dir_ / fs::path(intact_.payload_path).filename()).string();
    fs::copy_file(intact_.payload_path, payload_copy_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Payload offset of byte `index` of a range ("case.kv", "expected.cache", ...).
  std::int64_t offset_in(const std::string& range, std::int64_t index) const {
    const nlohmann::json& m = intact_.manifest;
    const nlohmann::json& r =
        range == "expected.cache" ? m.at("expected").at("cache") : m.at("case").at(range.substr(5)).at("payload");
    return r.at("offset").get<std::int64_t>() + index;
  }
  void flip(std::int64_t offset) {
    std::fstream file(payload_copy_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(offset);
    char b = 0;
    file.read(&b, 1);
    b = static_cast<char>(b ^ 0x01);
    file.seekp(offset);
    file.write(&b, 1);
  }
  golden::FixtureProblem problem_of_loading() const {
    try {
      golden::load_fixture(copy_);
    } catch (const golden::CorruptFixtureError& e) {
      last_message_ = e.what();
      return e.problem();
    }
    ADD_FAILURE() << "the damaged copy loaded without complaint";
    return golden::FixtureProblem::kMalformed;
  }

  fs::path dir_;
  std::string source_, copy_, payload_copy_;
  golden::Fixture intact_;
  mutable std::string last_message_;
};

TEST_F(CorruptFixture, FlippedExpectedByteIsACorruptFixtureNotAnOracleFailure) {
  // The byte of the first live record's first data byte: flipped past the hash check, the oracle
  // would disagree with it.
  const InsertCase& c = intact_.c;
  std::int64_t slot = -1;
  for (std::int64_t t = 0; t < c.num_inserted() && slot < 0; ++t) slot = c.slots.load<std::int64_t>(t);
  ASSERT_GE(slot, 0);
  const std::int64_t at = oracle::token_data_offset(testkit::view_of(c), slot);
  golden::Fixture tampered = intact_;
  tampered.expected_cache[static_cast<std::size_t>(at)] ^= 0x01;
  testkit::OracleBackend oracle;
  ASSERT_EQ(golden::check_fixture(tampered, oracle).verdict, golden::Verdict::kDiffers)
      << "the flipped byte would not even be an oracle failure: pick another";

  flip(offset_in("expected.cache", at));
  EXPECT_EQ(problem_of_loading(), golden::FixtureProblem::kHashMismatch);
  EXPECT_NE(last_message_.find("CORRUPT FIXTURE"), std::string::npos) << last_message_;
  EXPECT_NE(last_message_.find("expected.cache"), std::string::npos) << last_message_;
  EXPECT_NE(last_message_.find("never regenerate"), std::string::npos) << last_message_;
  EXPECT_EQ(last_message_.find("case.kv"), std::string::npos) << "an intact range was named:\n" << last_message_;
  std::printf("%s\n", last_message_.c_str());
}

TEST_F(CorruptFixture, FlippedInputByteNamesTheInputRange) {
  flip(offset_in("case.kv", 3));
  EXPECT_EQ(problem_of_loading(), golden::FixtureProblem::kHashMismatch);
  EXPECT_NE(last_message_.find("case.kv"), std::string::npos) << last_message_;
}

TEST_F(CorruptFixture, TruncatedOrMissingPayloadAndBrokenManifest) {
  fs::resize_file(payload_copy_, fs::file_size(payload_copy_) - 1);
  EXPECT_EQ(problem_of_loading(), golden::FixtureProblem::kPayloadSize);
  fs::remove(payload_copy_);
  EXPECT_EQ(problem_of_loading(), golden::FixtureProblem::kUnreadable);
  std::ofstream(copy_) << "{\"kvconform_golden_manifest\": 1";
  EXPECT_EQ(problem_of_loading(), golden::FixtureProblem::kMalformed);
}

// ---- the comparator's report ----------------------------------------------------------------

// The oracle with one cache byte and one q_out byte changed after the run.
class PlantedDifference final : public testkit::Backend {
 public:
  PlantedDifference(std::int64_t cache_offset, std::int64_t q_offset)
      : cache_offset_(cache_offset), q_offset_(q_offset) {}
  std::string name() const override { return "planted[oracle with two flipped bytes]"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    const Status s = testkit::OracleBackend().run(c, out);
    out.cache[static_cast<std::size_t>(cache_offset_)] ^= 0x10;
    if (q_offset_ >= 0) out.q_out[static_cast<std::size_t>(q_offset_)] ^= 0x01;
    return s;
  }

 private:
  std::int64_t cache_offset_, q_offset_;
};

TEST(FixtureComparator, PlantedDifferenceIsReportedWithPageSlotFieldBytesAndValues) {
  const golden::Fixture f = golden::load_fixture(std::string(KVC_GOLDEN_FIXTURE_DIR) + "/legacy.packed584.hp8.json");
  const InsertCase& c = f.c;
  std::int64_t slot = -1;
  for (std::int64_t t = 0; t < c.num_inserted() && slot < 0; ++t) slot = c.slots.load<std::int64_t>(t);
  ASSERT_GE(slot, 0);
  const oracle::PagedCacheView view = testkit::view_of(c);
  constexpr int kDim = 70;  // block 1
  const std::int64_t cache_at = oracle::token_data_offset(view, slot) + oracle::dim_offset_in_data(view.format, kDim);
  // q_out: token 1, head 2, dim 5 (head-major), high byte.
  const std::int64_t q_at = ((1 * c.padded_heads() + 2) * kHeadDim + 5) * 2 + 1;
  PlantedDifference planted(cache_at, q_at);
  const golden::FixtureCheck check = golden::check_fixture(f, planted);
  ASSERT_EQ(check.verdict, golden::Verdict::kDiffers);
  const std::string& r = check.report;
  std::printf("%s", r.c_str());
  const std::int64_t page = slot / c.cache.block_size;
  char bytes[64];
  std::snprintf(bytes, sizeof bytes, "expected 0x%02x actual 0x%02x",
                f.expected_cache[static_cast<std::size_t>(cache_at)],
                f.expected_cache[static_cast<std::size_t>(cache_at)] ^ 0x10);
  for (const std::string& want :
       std::vector<std::string>{"fixture legacy.packed584.hp8", "1 mismatching bytes", "page " + std::to_string(page),
                                "(slot " + std::to_string(slot) + ")", "fp8 code dim 70 block 1", std::string(bytes),
                                "expected fp8 0x", "actual   fp8 0x", "q_out: 1 mismatching bytes",
                                "token 1 head 2 dim 5", "expected bf16 0x", "actual   bf16 0x", "reproduce: ctest"})
    EXPECT_NE(r.find(want), std::string::npos) << "the report lacks \"" << want << "\"";
}

}  // namespace
}  // namespace kvc
