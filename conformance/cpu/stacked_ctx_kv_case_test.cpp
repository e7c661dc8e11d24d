// stacked_ctx_kv_case_test.cpp: the stacked context-KV case vocabulary: case files, comparators, registry.
//
// - Case files: a stacked case survives JSON byte for byte (eps by its bits, NaN included) and
//   replays to the same pools; each reader refuses the other kind's files and a version 1 stacked
//   file, naming why; insert case files are read as before. Catches a field dropped or renamed, a
//   float eps that loses bits, an insert reader that silently takes a stacked file as kv_only.
// - The pool comparator: planted differences are found and located: layer, K or V, token and
//   slot, head, dim, expected and actual values, ulp distance; a write to an unaddressed slot or
//   into the gap between slots is named as such. ulp distances across zero, of -0 and NaN.
// - The budget comparator: a reordered fp32 GEMM (reversed and pairwise sums) stays within the
//   budget on the upstream shapes; an element moved beyond it is reported with its location.
// - The registry: the upstream constants, unique names, every scenario buildable and valid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/storage16.h"
#include "testkit/io/case_file.h"
#include "testkit/cases/small_cases.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"

namespace kvc {
namespace {

StackedCtxKvOutputs oracle_pools(const StackedCtxKvCase& c, std::vector<std::uint16_t>* projection = nullptr) {
  StackedCtxKvOutputs out = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvRun run;
  const Status s = oracle::stacked_ctx_kv(c, out, {}, &run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (projection != nullptr) *projection = run.projection;
  return out;
}

// ---- case files ---------------------------------------------------------------------------------

TEST(StackedCaseFile, RoundTripsByteForByte) {
  testkit::StackedCtxKvShape shape = cases::upstream_stacked_shape(DType::kBF16, true);
  shape.skip_every = 2;
  shape.slot_padding = 8;
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(shape);
  c.layers[2].quantized = true;
  const nlohmann::json j = testkit::stacked_case_to_json(c);
  EXPECT_TRUE(testkit::is_stacked_case_file(j));
  const StackedCtxKvCase back = testkit::stacked_case_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(testkit::stacked_case_to_json(back), j);
  EXPECT_TRUE(back.layers[2].quantized);
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, oracle_pools(c), oracle_pools(back));
  EXPECT_TRUE(r.equal()) << testkit::format_stacked_report(c, r, "original", "replayed", "");
}

// docs/contract.md §7: a version 3 stacked file records its stacked policies; a version 2 file
// (none recorded) holds under the contract's; a version 3 file without them, or with a spec this
// build cannot read, is refused. Catches a writer that drops the policies or a reader that takes a
// file's expectations under the wrong policies.
TEST(StackedCaseFile, RecordsItsStackedPoliciesAndReadsVersionTwoAsTheContracts) {
  const StackedCtxKvCase c = testkit::small_stacked_case();
  const nlohmann::json fused = testkit::stacked_case_to_json(c, sglang_dspark_fused_profile());
  EXPECT_EQ(fused.at("stacked_profile"), "sglang-dspark-fused");
  EXPECT_EQ(testkit::stacked_case_profile_from_json(fused), sglang_dspark_fused_profile());
  EXPECT_NO_THROW(testkit::stacked_case_from_json(fused));
  const nlohmann::json plain = testkit::stacked_case_to_json(c);
  EXPECT_EQ(plain.at("stacked_profile"), "contract");

  nlohmann::json v2 = fused;
  v2["contract_version"] = 2;
  v2.erase("stacked_profile");
  EXPECT_EQ(testkit::stacked_case_profile_from_json(v2), contract_stacked_profile());
  EXPECT_NO_THROW(testkit::stacked_case_from_json(v2));

  nlohmann::json unrecorded = fused;
  unrecorded.erase("stacked_profile");
  EXPECT_THROW(testkit::stacked_case_from_json(unrecorded), std::runtime_error);
  nlohmann::json unreadable = fused;
  unreadable["stacked_profile"] = "reduction=tree";
  try {
    testkit::stacked_case_from_json(unreadable);
    ADD_FAILURE() << "a file naming unknown stacked policies was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("reduction"), std::string::npos) << e.what();
  }
}

TEST(StackedCaseFile, EpsKeepsItsBits) {
  StackedCtxKvCase c = testkit::small_stacked_case();
  c.layers[0].eps = std::nanf("0x123");
  c.layers[1].eps = std::nextafter(1e-6f, 1.0f);
  const StackedCtxKvCase back =
      testkit::stacked_case_from_json(nlohmann::json::parse(testkit::stacked_case_to_json(c).dump()));
  for (std::size_t l = 0; l < 2; ++l)
    EXPECT_EQ(std::memcmp(&back.layers[l].eps, &c.layers[l].eps, sizeof(float)), 0) << "layer " << l;
}

TEST(StackedCaseFile, ReadersRefuseTheOtherKindAndVersionOne) {
  const nlohmann::json stacked = testkit::stacked_case_to_json(testkit::small_stacked_case());
  try {
    testkit::case_from_json(stacked);
    ADD_FAILURE() << "the insert reader took a stacked case";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("stacked_case_from_json"), std::string::npos) << e.what();
  }
  const nlohmann::json insert =
      testkit::case_to_json(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584));
  try {
    testkit::stacked_case_from_json(insert);
    ADD_FAILURE() << "the stacked reader took an insert case";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("case_from_json"), std::string::npos) << e.what();
  }
  // Insert files still read as before.
  EXPECT_NO_THROW(testkit::case_from_json(insert));
  nlohmann::json v1 = stacked;
  v1["contract_version"] = 1;
  try {
    testkit::stacked_case_from_json(v1);
    ADD_FAILURE() << "a version 1 stacked file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("order of operations"), std::string::npos) << e.what();
  }
  nlohmann::json missing = stacked;
  missing["layers"][0].erase("eps_bits");
  EXPECT_THROW(testkit::stacked_case_from_json(missing), std::runtime_error);
}

// ---- the pool comparator ------------------------------------------------------------------------

void plant(std::vector<std::uint8_t>& pool, std::int64_t element, std::uint16_t value) {
  std::memcpy(pool.data() + element * 2, &value, 2);
}
std::uint16_t at(const std::vector<std::uint8_t>& pool, std::int64_t element) {
  std::uint16_t v;
  std::memcpy(&v, pool.data() + element * 2, 2);
  return v;
}

TEST(StackedPoolDiff, NamesLayerTokenHeadDimValuesAndUlps) {
  testkit::StackedCtxKvShape shape = cases::upstream_stacked_shape(DType::kF16, false);
  shape.slot_padding = 4;
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(shape);
  const StackedCtxKvOutputs expected = oracle_pools(c);
  const StackedCtxKvLayer& l2 = c.layers[2];
  const std::int64_t token = 3, head = 1, dim = 5;
  const std::int64_t slot = c.cache_loc.load<std::int64_t>(token);
  const std::int64_t element = slot * l2.k_pool.stride(0) + head * l2.head_dim + dim;

  StackedCtxKvOutputs actual = expected;
  const std::uint16_t e = at(expected.k_pools[2], element);
  plant(actual.k_pools[2], element, static_cast<std::uint16_t>(e + 1));
  testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, expected, actual);
  ASSERT_EQ(r.mismatch_count, 1);
  const testkit::PoolMismatch& m = r.first[0];
  EXPECT_EQ(m.layer, 2);
  EXPECT_FALSE(m.v_pool);
  EXPECT_EQ(m.token, token);
  EXPECT_EQ(m.slot, slot);
  EXPECT_EQ(m.head, head);
  EXPECT_EQ(m.dim, dim);
  EXPECT_EQ(m.ulp_distance, 1);
  const std::string text = testkit::describe_mismatch(m, DType::kF16);
  std::printf("%s\n", text.c_str());
  for (const std::string& part : {std::string("layer 2 K token 3"), std::string("head 1 dim 5"),
                                  "expected " + testkit::describe16(e, DType::kF16), std::string("1 ulp")})
    EXPECT_NE(text.find(part), std::string::npos) << text << " lacks " << part;

  // A write to a slot no token addresses, and one into the gap between slots.
  std::set<std::int64_t> used;
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) used.insert(c.cache_loc.load<std::int64_t>(t));
  std::int64_t free_slot = 0;
  while (used.count(free_slot)) ++free_slot;
  actual = expected;
  plant(actual.v_pools[0], free_slot * c.layers[0].v_pool.stride(0) + 2, 0x3C00);
  plant(actual.v_pools[1], slot * c.layers[1].v_pool.stride(0) + c.layers[1].kv_size() + 1, 0x3C00);
  r = testkit::diff_stacked_pools(c, expected, actual);
  EXPECT_EQ(r.mismatch_count, 2);
  EXPECT_EQ(r.count_by_class["layer 0 V unwritten slot"], 1);
  EXPECT_EQ(r.count_by_class["layer 1 V gap"], 1);
  const std::string report = testkit::format_stacked_report(c, r, "oracle", "planted", "ctest -R StackedPoolDiff");
  std::printf("%s", report.c_str());
  EXPECT_NE(report.find("no token writes it"), std::string::npos) << report;
  EXPECT_NE(report.find("gap between slots"), std::string::npos) << report;
  EXPECT_NE(report.find("reproduce: ctest -R StackedPoolDiff"), std::string::npos) << report;
}

TEST(StackedPoolDiff, UlpDistances) {
  EXPECT_EQ(testkit::ulp_distance16(0x3F80, 0x3F81, DType::kBF16), 1);
  EXPECT_EQ(testkit::ulp_distance16(0x0000, 0x8000, DType::kBF16), 0) << "+0 and -0";
  EXPECT_EQ(testkit::ulp_distance16(0x0001, 0x8001, DType::kF16), 2) << "across zero";
  EXPECT_EQ(testkit::ulp_distance16(0x7FFF, 0x7E01, DType::kF16), 0) << "two NaNs";
  EXPECT_EQ(testkit::ulp_distance16(0x7FFF, 0x3C00, DType::kF16), -1) << "NaN against a number";
  EXPECT_EQ(testkit::ulp_distance16(0x7F80, 0x7F7F, DType::kBF16), 1) << "Inf is one step past the largest finite";
}

// ---- the budget comparator ----------------------------------------------------------------------

// The projection of a case in fp32 with the terms summed in another order, rounded like the
// contract's (bias added once, one rounding to D): what a reordering GEMM may legitimately write.
enum class Order { kReversed, kPairwise };
std::vector<std::uint16_t> reordered_projection(const StackedCtxKvCase& c, Order order) {
  const std::int64_t width = c.projection_width(), hidden = c.hidden();
  std::vector<std::uint16_t> p(static_cast<std::size_t>(c.num_tokens() * width));
  std::vector<float> products(static_cast<std::size_t>(hidden));
  for (int l = 0; l < c.num_layers(); ++l) {
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      for (std::int64_t r = 0; r < layer.kv_rows(); ++r) {
        for (std::int64_t k = 0; k < hidden; ++k)
          products[static_cast<std::size_t>(k)] =
              oracle::widen16(c.x.load<std::uint16_t>(t * hidden + k), c.storage_dtype()) *
              oracle::widen16(layer.qkv_weight.load<std::uint16_t>((layer.q_size + r) * hidden + k), layer.dtype());
        float acc = 0.0f;
        if (order == Order::kReversed) {
          for (std::int64_t k = hidden - 1; k >= 0; --k) acc += products[static_cast<std::size_t>(k)];
        } else {
          std::vector<float> level = products;
          while (level.size() > 1) {
            std::vector<float> next((level.size() + 1) / 2);
            for (std::size_t i = 0; i < next.size(); ++i)
              next[i] = 2 * i + 1 < level.size() ? level[2 * i] + level[2 * i + 1] : level[2 * i];
            level = std::move(next);
          }
          acc = level.empty() ? 0.0f : level[0];
        }
        if (layer.has_bias())
          acc += oracle::widen16(layer.qkv_bias.load<std::uint16_t>(layer.q_size + r), layer.dtype());
        p[static_cast<std::size_t>(t * width + c.projection_column(l) + r)] = oracle::narrow16(acc, c.storage_dtype());
      }
    }
  }
  return p;
}

class StackedBudget : public ::testing::TestWithParam<cases::StackedSpec> {};

TEST_P(StackedBudget, ReorderedSumsStayWithinTheBudget) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  std::vector<std::uint16_t> expected;
  oracle_pools(c, &expected);
  const oracle::ProjectionFp64 ref = oracle::stacked_ctx_kv_projection_fp64(c);
  for (Order order : {Order::kReversed, Order::kPairwise}) {
    const std::vector<std::uint16_t> actual = reordered_projection(c, order);
    const testkit::ProjectionBudgetReport r = testkit::compare_projection_under_budget(c, expected, actual, ref);
    const std::string name = order == Order::kReversed ? "reversed-order" : "pairwise-order";
    std::printf("%s", testkit::format_budget_report(c, r, name).c_str());
    EXPECT_TRUE(r.within()) << testkit::format_budget_report(c, r, name);
  }
}

INSTANTIATE_TEST_SUITE_P(Upstream, StackedBudget, ::testing::ValuesIn(cases::stacked_upstream_matrix()),
                         [](const ::testing::TestParamInfo<cases::StackedSpec>& p) { return p.param.name; });

TEST(StackedBudgetPlanted, AnElementBeyondTheBudgetIsLocated) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(cases::upstream_stacked_shape(DType::kBF16, true));
  std::vector<std::uint16_t> expected;
  oracle_pools(c, &expected);
  const oracle::ProjectionFp64 ref = oracle::stacked_ctx_kv_projection_fp64(c);
  // Layer 1, token 4, V rows, head 0, dim 9: moved step by step until just beyond its allowance.
  const StackedCtxKvLayer& l1 = c.layers[1];
  const std::int64_t column = c.projection_column(1) + l1.kv_size() + 9;
  const std::size_t i = static_cast<std::size_t>(4 * c.projection_width() + column);
  const double allowance = oracle::projection_allowance(ref.magnitude[i], oracle::projection_terms(c, 1), DType::kBF16);
  std::vector<std::uint16_t> actual = expected;
  std::int64_t steps = 0;
  while (std::fabs(oracle::widen16(actual[i], DType::kBF16) - oracle::widen16(expected[i], DType::kBF16)) <=
         allowance) {
    actual[i] = static_cast<std::uint16_t>(actual[i] + 1);  // one step away from zero
    ++steps;
  }
  const testkit::ProjectionBudgetReport r = testkit::compare_projection_under_budget(c, expected, actual, ref);
  ASSERT_EQ(r.beyond_budget, 1) << testkit::format_budget_report(c, r, "planted");
  const testkit::ProjectionMismatch& m = r.first[0];
  EXPECT_EQ(m.layer, 1);
  EXPECT_TRUE(m.v_rows);
  EXPECT_EQ(m.token, 4);
  EXPECT_EQ(m.head, 0);
  EXPECT_EQ(m.dim, 9);
  EXPECT_EQ(m.ulp_distance, steps);
  const std::string report = testkit::format_budget_report(c, r, "planted");
  std::printf("%s", report.c_str());
  EXPECT_NE(report.find("layer 1 V token 4 head 0 dim 9"), std::string::npos) << report;
}

// ---- the registry -------------------------------------------------------------------------------

TEST(StackedRegistry, UpstreamShapeAndUniqueValidScenarios) {
  const testkit::StackedCtxKvShape u = cases::upstream_stacked_shape(DType::kF16, false);
  EXPECT_EQ(u.layers, 4);
  EXPECT_EQ(u.tokens, 5);
  EXPECT_EQ(u.hidden, 128);
  EXPECT_EQ(u.q_heads, 4);
  EXPECT_EQ(u.kv_heads, 2);
  EXPECT_EQ(u.head_dim, 64);
  EXPECT_EQ(u.eps, 1e-6f);
  EXPECT_EQ(u.max_pos, 4096);
  EXPECT_EQ(u.position_base, 0);
  std::set<std::string> names;
  std::vector<const std::vector<cases::StackedSpec>*> matrices = {&cases::stacked_upstream_matrix(),
                                                                  &cases::stacked_production_matrix()};
  for (const auto* family : cases::stacked_v3_families()) matrices.push_back(family);
  for (const auto* m : matrices) {
    for (const cases::StackedSpec& s : *m) {
      EXPECT_TRUE(names.insert(s.name).second) << s.name;
      if (s.shape.hidden > 1024) continue;  // production shapes: built by the GPU suite
      const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s.shape);
      EXPECT_TRUE(validate_stacked_ctx_kv(c, ValidationLevel::kStrict).ok()) << s.name;
    }
  }
  for (const cases::EligibilityScenario& s : cases::stacked_eligibility_matrix()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_TRUE(validate_stacked_ctx_kv(cases::build_eligibility_case(s), ValidationLevel::kStrict).ok()) << s.name;
  }
  int upstream = 0;
  for (const cases::EligibilityScenario& s : cases::stacked_eligibility_matrix()) upstream += s.upstream;
  EXPECT_EQ(upstream, 3) << "the original test's three fallback cases";
}

}  // namespace
}  // namespace kvc
