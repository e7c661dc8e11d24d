// stacked_ctx_kv_oracle_test.cpp: the stacked context-KV oracle (docs/contract.md §4.5).
//
// - Every path, byte for byte, on the upstream parity test's shapes (fp16, bf16, bias, skipped
//   tokens) and the version 3 families (fused-eligible models, head_dim no power of two and the
//   fallback head sizes, commit lengths): per-layer, stacked and (where eligible) fused pools and
//   stored projections identical; AUTO takes the fused path when eligible, else the stacked path.
//   Catches a stacked weight built in another layer order, a bias or norm weight of the wrong
//   layer, a stacked epilogue that reads another layer's columns, a fused path that projects a
//   head's rows from another head or layer, uses another eps or table, or ignores commit lengths.
// - The pool write: exactly the addressed slots' head elements are written (run with two canaries),
//   V is the stored projection, nothing lands in gaps or unaddressed slots. Catches a -1 slot taken
//   as an index, a write of the wrong slot stride, V normed or rotated.
// - Independent witnesses: every stored projection element lies within the forward error bound of
//   the fp64 (Eigen) value; worked examples of the fma chain's order (a reversed sum gives another
//   bf16), the K-norm and the NeoX pairing (a 90-degree rotation swaps the halves with one sign).
//   Catches a missing or doubled bias, a dropped or foreign term, a reordered sum, GPT-J pairing,
//   a rotation that reads the normed K before its rounding to D.
// - Token independence: the case restricted to some tokens writes those tokens' bytes, which the
//   GPU suite relies on to check large shapes at sampled tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "testkit/cases/stacked_ctx_kv_registry.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/oracle/stacked_ctx_kv_fp64.h"
#include "kvc/oracle/storage16.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"

namespace kvc {
namespace {

using cases::StackedSpec;

struct Ran {
  StackedCtxKvOutputs out;
  oracle::StackedCtxKvRun run;
};

Ran run_oracle(const StackedCtxKvCase& c, StackedPathRequest path, std::uint8_t canary = testkit::kCanary) {
  Ran r;
  r.out = testkit::make_stacked_outputs(c, canary);
  oracle::StackedCtxKvOptions o;
  o.path = path;
  const Status s = oracle::stacked_ctx_kv(c, r.out, o, &r.run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

class StackedOracle : public ::testing::TestWithParam<StackedSpec> {};

TEST_P(StackedOracle, EveryPathWritesThePerLayerBytes) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  const bool fused_eligible = stacked_fused_eligibility(c).eligible();
  const Ran per_layer = run_oracle(c, StackedPathRequest::kPerLayer);
  const Ran automatic = run_oracle(c, StackedPathRequest::kAuto);
  EXPECT_EQ(per_layer.run.path, StackedPath::kPerLayer);
  // AUTO: the fused path when the model is eligible for it, else the stacked path (docs/contract.md §4.5).
  EXPECT_EQ(automatic.run.path, fused_eligible ? StackedPath::kFused : StackedPath::kStacked)
      << stacked_fused_eligibility(c).to_string();
  std::vector<std::pair<const char*, StackedPathRequest>> others = {{"stacked", StackedPathRequest::kStacked}};
  if (fused_eligible) others.push_back({"fused", StackedPathRequest::kFused});
  for (const auto& [name, request] : others) {
    const Ran other = run_oracle(c, request);
    EXPECT_EQ(path_name(other.run.path), std::string(name));
    const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, per_layer.out, other.out);
    EXPECT_TRUE(r.equal()) << testkit::format_stacked_report(c, r, "per-layer", name,
                                                             "ctest -R 'StackedOracle.*" + GetParam().name + "'");
    EXPECT_EQ(per_layer.run.projection, other.run.projection) << name;
  }
}

TEST_P(StackedOracle, WritesExactlyTheAddressedHeadsAndVIsTheProjection) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  const Ran a = run_oracle(c, StackedPathRequest::kAuto, 0xA5);
  const Ran b = run_oracle(c, StackedPathRequest::kAuto, 0x5A);
  std::set<std::int64_t> written_slots;
  for (std::int64_t t = 0; t < c.num_tokens(); ++t)
    if (c.committed(t) && c.cache_loc.load<std::int64_t>(t) >= 0)
      written_slots.insert(c.cache_loc.load<std::int64_t>(t));
  const std::int64_t width = c.projection_width();
  for (int l = 0; l < c.num_layers(); ++l) {
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    for (const bool v : {false, true}) {
      const TensorMeta& m = v ? layer.v_pool : layer.k_pool;
      const auto& pa = v ? a.out.v_pools[static_cast<std::size_t>(l)] : a.out.k_pools[static_cast<std::size_t>(l)];
      const auto& pb = v ? b.out.v_pools[static_cast<std::size_t>(l)] : b.out.k_pools[static_cast<std::size_t>(l)];
      for (std::int64_t byte = 0; byte < static_cast<std::int64_t>(pa.size()); ++byte) {
        const std::int64_t e = (byte - m.offset_bytes) / 2;
        const std::int64_t slot = e / m.stride(0);
        const bool head_element = byte >= m.offset_bytes && e % m.stride(0) < layer.kv_size();
        const bool expect_written = head_element && written_slots.count(slot) > 0;
        ASSERT_EQ(pa[static_cast<std::size_t>(byte)] == pb[static_cast<std::size_t>(byte)], expect_written)
            << "layer " << l << (v ? " V" : " K") << " byte " << byte << " (slot " << slot << ")";
      }
    }
    // V at the written slots is the stored projection's V columns, unchanged.
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      const std::int64_t slot = c.cache_loc.load<std::int64_t>(t);
      if (slot < 0 || !c.committed(t)) continue;
      for (std::int64_t i = 0; i < layer.kv_size(); ++i) {
        std::uint16_t pooled;
        std::memcpy(&pooled,
                    a.out.v_pools[static_cast<std::size_t>(l)].data() + (slot * layer.v_pool.stride(0) + i) * 2, 2);
        ASSERT_EQ(pooled,
                  a.run.projection[static_cast<std::size_t>(t * width + c.projection_column(l) + layer.kv_size() + i)])
            << "layer " << l << " token " << t << " V element " << i;
      }
    }
  }
}

TEST_P(StackedOracle, ProjectionWithinTheForwardErrorBoundOfFp64) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  const Ran r = run_oracle(c, StackedPathRequest::kAuto);
  const oracle::ProjectionFp64 ref = oracle::stacked_ctx_kv_projection_fp64(c);
  std::int64_t beyond = 0;
  double worst = 0;
  for (int l = 0; l < c.num_layers(); ++l) {
    const std::int64_t terms = oracle::projection_terms(c, l);
    const std::int64_t column = c.projection_column(l);
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      for (std::int64_t j = 0; j < c.layers[static_cast<std::size_t>(l)].kv_rows(); ++j) {
        const std::size_t i = static_cast<std::size_t>(t * ref.width + column + j);
        // The stored value adds one rounding to D: half an ulp of D at the magnitude.
        const double stored = oracle::widen16(r.run.projection[i], c.storage_dtype());
        const double slack =
            0.5 * oracle::storage_ulp(ref.magnitude[i] * (1 + oracle::gemm_gamma(terms)), c.storage_dtype());
        const double error = std::fabs(stored - ref.value[i]);
        const double bound = (oracle::gemm_gamma(terms) + oracle::gemm_gamma(terms, oracle::kFp64UnitRoundoff)) *
                                 ref.magnitude[i] * (1 + 0x1p-50) +
                             slack;
        worst = std::max(worst, error / bound);
        if (error > bound) ++beyond;
      }
    }
  }
  std::printf("%s: worst |stored - fp64| / bound = %.3f\n", GetParam().name.c_str(), worst);
  EXPECT_EQ(beyond, 0) << "stored projection elements beyond gamma_n S + half an ulp of the fp64 value";
}

TEST_P(StackedOracle, ATokenSubsetWritesThoseTokensBytes) {
  const StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(GetParam().shape);
  const Ran full = run_oracle(c, StackedPathRequest::kAuto);
  const std::vector<std::int64_t> tokens = testkit::sample_tokens(c.num_tokens(), 1, 3);
  const StackedCtxKvCase sub = testkit::with_tokens(c, tokens);
  const Ran part = run_oracle(sub, StackedPathRequest::kAuto);
  const StackedCtxKvOutputs at_slots = testkit::pools_at_written_slots(sub, full.out);
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(sub, part.out, at_slots);
  EXPECT_TRUE(r.equal()) << testkit::format_stacked_report(sub, r, "token subset", "full case", "");
}

INSTANTIATE_TEST_SUITE_P(Upstream, StackedOracle, ::testing::ValuesIn(cases::stacked_upstream_matrix()),
                         [](const ::testing::TestParamInfo<StackedSpec>& p) { return p.param.name; });
// The version 3 families (testkit/cases/stacked_ctx_kv_registry.h). The split-reduction family
// (hidden 4096, 8 and 12 layers) is left to the device suite, whose oracle checks sampled tokens:
// every token on every path here would cost about a minute.
INSTANTIATE_TEST_SUITE_P(Fused, StackedOracle, ::testing::ValuesIn(cases::stacked_fused_matrix()),
                         [](const ::testing::TestParamInfo<StackedSpec>& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(NonPow2HeadDim, StackedOracle, ::testing::ValuesIn(cases::stacked_non_pow2_head_dim_matrix()),
                         [](const ::testing::TestParamInfo<StackedSpec>& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(FallbackHeadSize, StackedOracle,
                         ::testing::ValuesIn(cases::stacked_fallback_head_size_matrix()),
                         [](const ::testing::TestParamInfo<StackedSpec>& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(CommitLens, StackedOracle, ::testing::ValuesIn(cases::stacked_commit_lens_matrix()),
                         [](const ::testing::TestParamInfo<StackedSpec>& p) { return p.param.name; });

// ---- worked examples: the order of operations, by hand ------------------------------------------

// bf16 bits of exact values used below.
constexpr std::uint16_t kOne = 0x3F80;            // 1
constexpr std::uint16_t kTwoPowMinus4 = 0x3D80;   // 2^-4
constexpr std::uint16_t kTwoPowMinus12 = 0x3980;  // 2^-12

TEST(StackedOracleWorkedExample, TheFmaChainRunsInColumnOrder) {
  // Terms 1, 2^-8, 2^-24, 2^-24. In column order: 1 + 2^-8 is exact, and each 2^-24 is a tie at
  // 1 + 2^-8 that rounds to even (back to 1 + 2^-8); bf16 then ties 1 + 2^-8 to 1.0 (0x3F80). In
  // reverse order the two small terms make 2^-23 first, the sum is 1 + 2^-8 + 2^-23, and bf16
  // rounds it up to 1 + 2^-7 (0x3F81).
  const std::uint16_t x[] = {kOne, kTwoPowMinus4, kTwoPowMinus12, kTwoPowMinus12};
  const std::uint16_t column_order =
      oracle::project_element(x, DType::kBF16, x, DType::kBF16, 4, nullptr, DType::kBF16);
  EXPECT_EQ(column_order, 0x3F80);
  float reversed = 0.0f;
  for (int c = 3; c >= 0; --c) reversed = std::fma(oracle::bf16_to_float(x[c]), oracle::bf16_to_float(x[c]), reversed);
  EXPECT_EQ(oracle::float_to_bf16(reversed), 0x3F81) << "the example must tell the two orders apart";
  // Both are within the reordering budget of each other: S = 1 + 2^-8 + 2^-23, ulp_bf16(S) = 2^-7.
  EXPECT_LE(std::fabs(oracle::bf16_to_float(0x3F81) - oracle::bf16_to_float(0x3F80)),
            oracle::projection_allowance(1.0 + 0x1p-8 + 0x1p-23, 4, DType::kBF16));
  // A bias is added once, after the chain: 1 + 2^-8 (exact in fp32) plus 2^-8 = 1 + 2^-7.
  const std::uint16_t bias = 0x3B80;  // 2^-8
  EXPECT_EQ(oracle::project_element(x, DType::kBF16, x, DType::kBF16, 2, &bias, DType::kBF16), 0x3F81);
}

TEST(StackedOracleWorkedExample, KNormThenNeoXPairsDimWithDimPlusHalf) {
  // One head of 4 dims, K = (3, 4, 0, 0), weight 1, eps 0: S = 25, r = rsqrt(25 / 4) = 0.4 (the
  // correctly rounded fp32 of 0.4), normed = (fl(3 r), fl(4 r), 0, 0).
  const float w[] = {1, 1, 1, 1};
  const float r = 0.4f;
  const std::uint16_t n0 = oracle::float_to_bf16(3.0f * r), n1 = oracle::float_to_bf16(4.0f * r);
  // Identity rotation (cos 1, sin 0): the stored normed K.
  std::uint16_t k[] = {0x4040, 0x4080, 0, 0};  // 3, 4, 0, 0
  const float identity[] = {1, 1, 0, 0};
  oracle::k_norm_rope_head(k, 4, w, 0.0f, identity, DType::kBF16);
  EXPECT_EQ(k[0], n0);
  EXPECT_EQ(k[1], n1);
  EXPECT_EQ(k[2], 0);
  EXPECT_EQ(k[3], 0);
  // 90 degrees (cos 0, sin 1): NeoX pairs (0, 2) and (1, 3): first = fma(a, 0, -fl(b * 1)) with
  // b = 0, i.e. +0 + -0 = +0, and second = a. GPT-J's adjacent pairs (0, 1) would give
  // (-n1, n0, 0, 0) instead.
  std::uint16_t q[] = {0x4040, 0x4080, 0, 0};
  const float quarter[] = {0, 0, 1, 1};
  oracle::k_norm_rope_head(q, 4, w, 0.0f, quarter, DType::kBF16);
  EXPECT_EQ(q[0], 0x0000);
  EXPECT_EQ(q[1], 0x0000);
  EXPECT_EQ(q[2], n0);
  EXPECT_EQ(q[3], n1);
}

TEST(StackedOracleWorkedExample, NormedKIsRoundedToDBeforeTheRotation) {
  // bf16, one head of 4 dims, K = (3, 0, 4, 0), weight 1, eps 0: S = 25, r = rsqrt(25 / 4) = 0.4f
  // (0x3ECCCCCD). Normed in fp32: fl(3 r) = 1.20000005 (0x3F99999A), 4 r = 1.60000002 (0x3FCCCCCD),
  // stored in D as 1.203125 (0x3F9A) and 1.6015625 (0x3FCD). The table row is all ones (cos = sin
  // = 1), so the pair (0, 2) becomes (a - b, a + b) of what the rotation reads:
  //   the stored values: 1.203125 - 1.6015625 = -0.3984375 (exact, 0xBECC) and 2.8046875, a bf16
  //   tie between 2.796875 (0x4033) and 2.8125 (0x4034), to even: 0x4034;
  //   the fp32 values: -0.39999998 (bf16 0xBECD) and 2.8000001 (bf16 0x4033), another answer.
  // The pair (1, 3) holds zeros: fma(0, 1, -fl(0 * 1)) = +0.
  const float w[] = {1, 1, 1, 1};
  const float ones[] = {1, 1, 1, 1};
  std::uint16_t k[] = {0x4040, 0x0000, 0x4080, 0x0000};  // 3, 0, 4, 0
  oracle::k_norm_rope_head(k, 4, w, 0.0f, ones, DType::kBF16);
  EXPECT_EQ(k[0], 0xBECC);
  EXPECT_EQ(k[1], 0x0000);
  EXPECT_EQ(k[2], 0x4034);
  EXPECT_EQ(k[3], 0x0000);
}

}  // namespace
}  // namespace kvc
