// stacked_ctx_kv_judge_policies_test.cpp: the stacked judge under declared stacked policies
// (testkit/compare/stacked_ctx_kv_judge.h, stacked_k_norm_freedom.h; docs/contract.md §6.2.1).
// Library runs are made here from the oracle's parts, each following one policy:
// - the CUDA fma pair: K elements 1 ulp from the contract's fail under the contract's policies and
//   pass under `rope=fma-pair`; one element planted 2 ulps from the contract fails under both.
//   Catches a judge that ignores the declared rope, or one that is lenient instead of exact.
// - the lane-tree reduction: fails under the contract's, passes exactly under `lane-tree` and
//   within the budget under `unspecified`, whose report prints the budget and the heads that
//   needed it; at an element whose derived budget is 1 ulp, a planted 1-ulp difference passes
//   under `unspecified` only, and a 2-ulp one fails under all three. Catches a budget that is too
//   loose, or one that does not follow the element.
// - an approximate reciprocal, r moved by 3 fp32 ulps in every head: passes under
//   `reciprocal=approx` naming the nearest r' that reproduces each head, fails under the
//   contract's; moved by 6 ulps it
//   fails. Catches a search wider than the declared 4 ulps, or none.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_k_norm.h"
#include "kvc/oracle/storage16.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"
#include "testkit/compare/stacked_ctx_kv_judge.h"
#include "testkit/compare/stacked_k_norm_freedom.h"

namespace kvc {
namespace {

using testkit::StackedGemm;
using testkit::StackedRun;
using testkit::VerdictKind;

StackedCtxKvCase many_tokens_case() {
  testkit::StackedCtxKvShape shape;
  shape.layers = 2;
  shape.tokens = 512;  // 131072 K elements: the rope patterns differ in about 1 of 20000 (issue 25)
  shape.extra_slots = 4;
  shape.seed = 11;
  return testkit::make_stacked_ctx_kv_case(shape);
}

StackedRun oracle_run(const StackedCtxKvCase& c, const StackedProfile& p, const char* name) {
  StackedRun r;
  r.name = name;
  r.pools = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.profile = p;
  o.path = StackedPathRequest::kPerLayer;
  oracle::StackedCtxKvRun run;
  r.status = oracle::stacked_ctx_kv(c, r.pools, o, &run);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  r.path = run.path;
  r.projection = run.projection;
  return r;
}

testkit::Verdict judge(const StackedCtxKvCase& c, const StackedRun& run, const StackedProfile& p) {
  return testkit::judge_stacked(c, {}, StackedGemm::kExactOrder, {run}, "ctest", p);
}

StackedProfile spec(const char* s) {
  const auto p = parse_stacked_profile(s);
  EXPECT_TRUE(p.has_value()) << s;
  return p.value_or(StackedProfile{});
}

// A K element of one head: layer, token, head, dim, and its byte in the layer's K pool.
struct KElement {
  int layer = 0;
  std::int64_t token = 0, head = 0, dim = 0, byte = 0;
};
std::int64_t k_byte(const StackedCtxKvCase& c, int layer, std::int64_t token, std::int64_t head, std::int64_t dim) {
  const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(layer)];
  const std::int64_t slot = c.cache_loc.load<std::int64_t>(token);
  return l.k_pool.offset_bytes + (slot * l.k_pool.stride(0) + head * l.k_pool.stride(1) + dim) * 2;
}
std::uint16_t get16(const StackedCtxKvOutputs& o, int layer, std::int64_t byte) {
  std::uint16_t v;
  std::memcpy(&v, o.k_pools[static_cast<std::size_t>(layer)].data() + byte, 2);
  return v;
}
void set16(StackedCtxKvOutputs& o, int layer, std::int64_t byte, std::uint16_t v) {
  std::memcpy(o.k_pools[static_cast<std::size_t>(layer)].data() + byte, &v, 2);
}
// Every written K element where `a` and `b` differ.
std::vector<KElement> differing(const StackedCtxKvCase& c, const StackedCtxKvOutputs& a, const StackedCtxKvOutputs& b) {
  std::vector<KElement> out;
  for (int l = 0; l < c.num_layers(); ++l)
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      if (c.cache_loc.load<std::int64_t>(t) < 0) continue;
      const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
      for (std::int64_t h = 0; h < layer.num_kv_heads; ++h)
        for (std::int64_t d = 0; d < layer.head_dim; ++d) {
          const std::int64_t byte = k_byte(c, l, t, h, d);
          if (get16(a, l, byte) != get16(b, l, byte)) out.push_back({l, t, h, d, byte});
        }
    }
  return out;
}
// One step of a 16-bit value away from zero... in the direction of `toward` (+1 / -1 ordinal).
std::uint16_t step16(std::uint16_t v, int steps) {
  const bool negative = (v & 0x8000u) != 0;
  const int magnitude = v & 0x7FFF;
  const int ordinal = (negative ? -magnitude : magnitude) + steps;
  return static_cast<std::uint16_t>(ordinal < 0 ? (0x8000 | -ordinal) : ordinal);
}

TEST(StackedJudgePolicies, RopeFmaPairPassesOnlyWhereDeclaredAndTwoUlpsFailEverywhere) {
  const StackedCtxKvCase c = many_tokens_case();
  const StackedRun contract = oracle_run(c, contract_stacked_profile(), "contract-double");
  const StackedRun pair = oracle_run(c, spec("rope=fma-pair"), "fma-pair double");
  const std::vector<KElement> diff = differing(c, contract.pools, pair.pools);
  ASSERT_FALSE(diff.empty()) << "the patterns agree on every K element of the case";
  for (const KElement& e : diff)
    EXPECT_EQ(testkit::ulp_distance16(get16(contract.pools, e.layer, e.byte), get16(pair.pools, e.layer, e.byte),
                                      c.storage_dtype()),
              1);
  EXPECT_EQ(judge(c, pair, contract_stacked_profile()).kind, VerdictKind::kMismatch);
  const testkit::Verdict declared = judge(c, pair, spec("rope=fma-pair"));
  EXPECT_EQ(declared.kind, VerdictKind::kMatch) << declared.report;
  EXPECT_NE(declared.report.find("stacked profile `rope=fma-pair`"), std::string::npos) << declared.report;

  StackedRun two = contract;
  two.name = "2-ulp double";
  const KElement& e = diff.front();
  set16(two.pools, e.layer, e.byte, step16(get16(contract.pools, e.layer, e.byte), 2));
  EXPECT_EQ(judge(c, two, contract_stacked_profile()).kind, VerdictKind::kMismatch);
  EXPECT_EQ(judge(c, two, spec("rope=fma-pair")).kind, VerdictKind::kMismatch);
}

TEST(StackedJudgePolicies, LaneTreeIsExactWhereDeclaredAndWithinTheDerivedBudgetWhenUnspecified) {
  const StackedCtxKvCase c = many_tokens_case();
  const StackedRun sequential = oracle_run(c, contract_stacked_profile(), "sequential double");
  const StackedRun tree = oracle_run(c, spec("reduction=lane-tree"), "lane-tree double");
  const std::vector<KElement> diff = differing(c, sequential.pools, tree.pools);
  ASSERT_FALSE(diff.empty()) << "the two sums agree on every K element of the case";
  EXPECT_EQ(judge(c, tree, contract_stacked_profile()).kind, VerdictKind::kMismatch);
  EXPECT_EQ(judge(c, tree, spec("reduction=lane-tree")).kind, VerdictKind::kMatch);
  const testkit::Verdict unspecified = judge(c, tree, spec("reduction=unspecified"));
  EXPECT_EQ(unspecified.kind, VerdictKind::kMatch) << unspecified.report;
  EXPECT_NE(unspecified.report.find("widest budget"), std::string::npos) << unspecified.report;
  EXPECT_NE(unspecified.report.find("needed it: layer " + std::to_string(diff.front().layer) + " token " +
                                    std::to_string(diff.front().token)),
            std::string::npos)
      << unspecified.report;
  std::printf("%s", unspecified.report.c_str());

  // An element whose derived budget on its upper side is exactly 1 ulp, planted 2 ulps above.
  bool planted = false;
  for (int li = 0; li < c.num_layers() && !planted; ++li) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(li)];
    std::vector<float> w(static_cast<std::size_t>(l.head_dim));
    for (std::int64_t d = 0; d < l.head_dim; ++d)
      w[static_cast<std::size_t>(d)] = oracle::widen16(l.k_norm_weight.load<std::uint16_t>(d), l.dtype());
    for (std::int64_t t = 0; t < c.num_tokens() && !planted; ++t) {
      if (c.cache_loc.load<std::int64_t>(t) < 0) continue;
      const float* cs = reinterpret_cast<const float*>(l.cos_sin.bytes.data() + l.cos_sin.meta.offset_bytes) +
                        c.positions.load<std::int64_t>(t) * l.head_dim;
      const std::uint16_t* k = sequential.projection->data() + t * c.projection_width() + c.projection_column(li);
      const testkit::KHeadBudget b = testkit::unspecified_reduction_budget(
          k, l.head_dim, w.data(), l.eps, cs, c.storage_dtype(), spec("reduction=unspecified"));
      for (std::int64_t d = 0; d < l.head_dim && !planted; ++d) {
        const std::int64_t byte = k_byte(c, li, t, 0, d);
        const std::uint16_t oracle_value = get16(sequential.pools, li, byte);
        if (testkit::ulp_distance16(b.hi[static_cast<std::size_t>(d)], oracle_value, c.storage_dtype()) != 1 ||
            oracle::widen16(b.hi[static_cast<std::size_t>(d)], c.storage_dtype()) <=
                oracle::widen16(oracle_value, c.storage_dtype()))
          continue;
        StackedRun two = sequential;
        two.name = "2-ulp double";
        set16(two.pools, li, byte, step16(oracle_value, 2));
        ASSERT_EQ(testkit::ulp_distance16(get16(two.pools, li, byte), oracle_value, c.storage_dtype()), 2);
        StackedRun one = sequential;  // 1 ulp up: inside this element's budget, outside the exact orders
        one.name = "1-ulp double";
        set16(one.pools, li, byte, step16(oracle_value, 1));
        EXPECT_EQ(judge(c, one, spec("reduction=unspecified")).kind, VerdictKind::kMatch);
        EXPECT_EQ(judge(c, one, spec("reduction=lane-tree")).kind, VerdictKind::kMismatch);
        for (const char* p : {"contract", "reduction=lane-tree", "reduction=unspecified"})
          EXPECT_EQ(judge(c, two, spec(p)).kind, VerdictKind::kMismatch) << p;
        planted = true;
      }
    }
  }
  EXPECT_TRUE(planted) << "no K element with a budget of exactly 1 ulp above it";
}

// The library double of an approximate reciprocal: every written head re-run with r moved by
// `steps` fp32 ulps from the correctly rounded r of the sequential sum.
StackedRun reciprocal_moved(const StackedCtxKvCase& c, const StackedRun& base, int steps) {
  StackedRun r = base;
  r.name = "r " + std::to_string(steps) + " ulp double";
  for (int li = 0; li < c.num_layers(); ++li) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(li)];
    std::vector<float> w(static_cast<std::size_t>(l.head_dim));
    for (std::int64_t d = 0; d < l.head_dim; ++d)
      w[static_cast<std::size_t>(d)] = oracle::widen16(l.k_norm_weight.load<std::uint16_t>(d), l.dtype());
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      if (c.cache_loc.load<std::int64_t>(t) < 0) continue;
      const float* cs = reinterpret_cast<const float*>(l.cos_sin.bytes.data() + l.cos_sin.meta.offset_bytes) +
                        c.positions.load<std::int64_t>(t) * l.head_dim;
      for (std::int64_t h = 0; h < l.num_kv_heads; ++h) {
        std::vector<std::uint16_t> k(
            base.projection->begin() + t * c.projection_width() + c.projection_column(li) + h * l.head_dim,
            base.projection->begin() + t * c.projection_width() + c.projection_column(li) + (h + 1) * l.head_dim);
        std::vector<float> e(k.size());
        for (std::size_t d = 0; d < k.size(); ++d) e[d] = oracle::widen16(k[d], c.storage_dtype());
        float rr = oracle::k_norm_reciprocal(
            oracle::k_norm_sum_of_squares(e.data(), l.head_dim, KNormReduction::kSequential), l.head_dim, l.eps);
        for (int s = 0; s < steps; ++s) rr = std::nextafter(rr, 2.0f * rr + 1.0f);
        oracle::k_norm_rope_head_with_r(k.data(), l.head_dim, w.data(), rr, cs, c.storage_dtype(),
                                        StackedRope::kContract);
        for (std::int64_t d = 0; d < l.head_dim; ++d)
          set16(r.pools, li, k_byte(c, li, t, h, d), k[static_cast<std::size_t>(d)]);
      }
    }
  }
  return r;
}

TEST(StackedJudgePolicies, ApproximateReciprocalPassesWithinFourUlpsOfRAndNamesRPrime) {
  const StackedCtxKvCase c = many_tokens_case();
  const StackedRun exact = oracle_run(c, contract_stacked_profile(), "rn double");
  const StackedRun three = reciprocal_moved(c, exact, 3);
  ASSERT_FALSE(differing(c, exact.pools, three.pools).empty()) << "3 ulps of r changed no K element";
  EXPECT_EQ(judge(c, three, contract_stacked_profile()).kind, VerdictKind::kMismatch);
  const testkit::Verdict approx = judge(c, three, spec("reciprocal=approx"));
  EXPECT_EQ(approx.kind, VerdictKind::kMatch) << approx.report;
  // The nearest r' that gives the head's bytes is named: at most the 3 ulps the double moved.
  EXPECT_NE(approx.report.find("reproduced with r' = r +"), std::string::npos) << approx.report;
  const StackedRun six = reciprocal_moved(c, exact, 6);
  EXPECT_EQ(judge(c, six, spec("reciprocal=approx")).kind, VerdictKind::kMismatch)
      << "6 ulps of r passed a budget of " << kApproxReciprocalMaxUlps;
}

}  // namespace
}  // namespace kvc
