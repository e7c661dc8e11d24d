// rope_test.cpp: the rotation's fma pattern, GPT-J and NeoX pairing, the cos/sin table.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kvc/contract.h"
#include "kvc/oracle/cos_sin_cache.h"
#include "kvc/oracle/rope.h"

namespace kvc::oracle {
namespace {

// Found by search: the contract pattern fma(a,c,-fl(b s)) / fma(a,s,fl(b c)) differs here from
// plain fl(fl(ac) - fl(bs)), from fma(-b,s,fl(ac)), and from fl(fl(as) + fl(bc)).
constexpr float kA = -0x1.f88d3p-3f, kB = 0x1.e9b344p+0f, kC = 0x1.c9a82p-1f, kS = -0x1.6bd93p-3f;

TEST(Rope, ContractFmaPatternKnownAnswer) {
  const RotatedPair r = rope_rotate_pair(kA, kB, kC, kS);
  EXPECT_EQ(r.first, 0x1.ea01eap-4f);
  EXPECT_EQ(r.second, 0x1.c0edc2p+0f);
  // Independent derivation: a*c is exact in double and the difference is exact too, so one
  // rounding to float is the single rounding of the fma.
  const float bs = kB * kS, bc = kB * kC;
  EXPECT_EQ(r.first, static_cast<float>(static_cast<double>(kA) * kC - bs));
  EXPECT_EQ(r.second, static_cast<float>(static_cast<double>(kA) * kS + bc));
}

TEST(Rope, OtherContractionsGiveOtherBits) {
  const RotatedPair r = rope_rotate_pair(kA, kB, kC, kS);
  const float ac = kA * kC, bs = kB * kS, as = kA * kS, bc = kB * kC;
  EXPECT_NE(r.first, ac - bs) << "plain mul/mul/sub";
  EXPECT_NE(r.first, std::fma(-kB, kS, ac)) << "fma on the other product";
  EXPECT_NE(r.second, as + bc) << "plain mul/mul/add";
}

TEST(Rope, GptjRotatesAdjacentPairsOfTheRopeDimsOnly) {
  std::vector<float> row(kHeadDim), csc(kRopeDim);
  for (int d = 0; d < kHeadDim; ++d) row[d] = static_cast<float>(d % 7) - 3.0f;
  for (int j = 0; j < kRopePairs; ++j) {
    csc[j] = 0.25f * static_cast<float>(j % 3);
    csc[kRopePairs + j] = 0.5f;
  }
  std::vector<float> out = row;
  rope_gptj_row(out.data(), csc.data());
  for (int d = 0; d < kNopeDim; ++d) ASSERT_EQ(out[d], row[d]) << "NoPE dim " << d;
  for (int j = 0; j < kRopePairs; ++j) {
    const RotatedPair r =
        rope_rotate_pair(row[kNopeDim + 2 * j], row[kNopeDim + 2 * j + 1], csc[j], csc[kRopePairs + j]);
    EXPECT_EQ(out[kNopeDim + 2 * j], r.first) << "pair " << j;
    EXPECT_EQ(out[kNopeDim + 2 * j + 1], r.second) << "pair " << j;
  }
}

TEST(Rope, NeoxPairsHalves) {
  std::vector<float> head = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> csc = {1, 0, 0.5f, 0, 0, 1, 0.5f, 0};  // cos|sin for 4 pairs
  rope_neox_head(head.data(), 8, csc.data());
  // pair 0 (1,5): c=1,s=0 -> unchanged; pair 1 (2,6): c=0,s=1 -> (-6, 2); pair 2 (3,7): c=.5,s=.5
  EXPECT_EQ(head[0], 1.0f);
  EXPECT_EQ(head[4], 5.0f);
  EXPECT_EQ(head[1], -6.0f);
  EXPECT_EQ(head[5], 2.0f);
  EXPECT_EQ(head[2], 3.0f * 0.5f - 7.0f * 0.5f);
  EXPECT_EQ(head[6], 3.0f * 0.5f + 7.0f * 0.5f);
  EXPECT_EQ(head[3], 0.0f) << "c=0,s=0 zeroes the pair";
}

TEST(CosSinCache, Base10000Layout) {
  const auto t = make_cos_sin_cache(4, kRopeDim);
  ASSERT_EQ(t.size(), 4u * kRopeDim);
  for (int j = 0; j < kRopePairs; ++j) {
    EXPECT_EQ(t[j], 1.0f);
    EXPECT_EQ(t[kRopePairs + j], 0.0f);
  }
  // Row 1, pair 0: frequency 1, so cos(1) and sin(1) rounded once to fp32.
  EXPECT_EQ(t[kRopeDim + 0], static_cast<float>(std::cos(1.0)));
  EXPECT_EQ(t[kRopeDim + kRopePairs], static_cast<float>(std::sin(1.0)));
  // Pair 16 of 32: frequency 10000^-(32/64) = 0.01.
  EXPECT_EQ(t[3 * kRopeDim + 16], static_cast<float>(std::cos(3.0 / 100.0)));
  const auto neox = make_cos_sin_cache(2, 128);
  EXPECT_EQ(neox.size(), 256u);
  EXPECT_EQ(neox[128 + 64], static_cast<float>(std::sin(1.0)));
}

}  // namespace
}  // namespace kvc::oracle
