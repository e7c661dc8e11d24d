// stacked_profile.h: the stacked context-KV op's declared policies and named profiles
// (docs/contract.md §4.5, §6.2.1; contract version 3).
//
// The insert ops' policies (profile.h) concern record bytes; the stacked op's concern its epilogue
// and its pool writes: which rounding pattern the NeoX rotation uses, in which order the K-norm
// sums its squares, how it takes the reciprocal square root, and what a cache_loc entry of 0 or
// below means. Real SGLang paths differ from the contract in exactly these four choices (issue
// 25), so a library declares them and is judged against the oracle run under its declaration:
// exactly where the declaration fixes an order, under a derived budget where it does not
// (testkit/compare/stacked_k_norm_freedom.h). Alternative 0 of every policy is the contract's.
//
// A stacked profile has a name: `contract`, `sglang-dspark-stacked`, `sglang-dspark-fused`, or
// a spec composing one policy by policy on top of `contract` or of a named profile given first
// ("sglang-dspark-fused,cache-loc=slot0-reserved"). parse_stacked_profile() reads every form;
// stacked_profile_name() writes the shortest, and parse(name(p)) == p.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvc {

// The rounding pattern of one NeoX pair (a, b) rotated by (c, s), each result then rounded to D.
enum class StackedRope : std::uint8_t {
  kContract = 0,     // a' = fma(a, c, -fl(b*s)), b' = fma(a, s, fl(b*c)) (docs/contract.md §2.7)
  kCudaFmaPair = 1,  // a' = fma(a, c, -fl(b*s)), b' = fma(b, c, fl(a*s)) (SGLang's CUDA rope kernel)
};

// The order of the K-norm's sum of squares S over a head of hd dims.
enum class KNormReduction : std::uint8_t {
  kSequential = 0,   // S = fma(e[d], e[d], S) for d = 0..hd-1 from 0 (the contract)
  kLaneTree = 1,     // 32 lanes of ceil(hd/32) contiguous dims, each a sequential fma chain, then the
                     // §1.3 butterfly tree over the 32 lane sums (docs/contract.md §4.5)
  kUnspecified = 2,  // any order: judged under a per-element budget derived from the sum's error bound
};

// How r = 1/sqrt(ms + eps) is taken from ms + eps = fma(S, fl(1/hd), eps).
enum class KNormReciprocal : std::uint8_t {
  kCorrectlyRounded = 0,  // rsqrt_rn (the contract)
  kApproximate = 1,       // an approximate sqrt and a full division: r within kApproxReciprocalMaxUlps
};
// The approximate reciprocal's budget, on r, as §2.5 states the approximate rsqrt's: a head passes
// if some r' within this many fp32 ulps of the correctly rounded r reproduces its bytes exactly.
// Derivation (docs/contract.md §6.2.1): sqrt.approx's relative error <= 2^-23 moves 1/sqrt by <= 2
// ulps of r, the full division adds <= 2 ulps, the correctly rounded r is <= 0.5 ulp from exact:
// two floats <= 4.5 ulps apart are <= 4 apart.
inline constexpr int kApproxReciprocalMaxUlps = 4;

// What a cache_loc entry of 0 or below means.
enum class CacheLocPolicy : std::uint8_t {
  kNegativeSkipped = 0,   // loc < 0 writes nothing; slot 0 is a slot like any other (the contract)
  kSlotZeroReserved = 1,  // loc 0 writes nothing (a reserved padding slot); loc < 0 is E159
};

struct StackedProfile {
  StackedRope rope = StackedRope::kContract;
  KNormReduction reduction = KNormReduction::kSequential;
  KNormReciprocal reciprocal = KNormReciprocal::kCorrectlyRounded;
  CacheLocPolicy cache_loc = CacheLocPolicy::kNegativeSkipped;

  // Whether the declared policies fix every byte (the judge compares exactly), or leave the
  // K-norm's r free (an approximate reciprocal or an unspecified reduction: a budget applies).
  bool k_norm_exact() const {
    return reduction != KNormReduction::kUnspecified && reciprocal == KNormReciprocal::kCorrectlyRounded;
  }
};

bool operator==(const StackedProfile& a, const StackedProfile& b);
inline bool operator!=(const StackedProfile& a, const StackedProfile& b) { return !(a == b); }

// The contract (every policy's alternative 0).
StackedProfile contract_stacked_profile();
// SGLang's stacked and per-layer paths (issue 25): the CUDA rope kernel's pattern, the framework's
// reduction (order unspecified) with a correctly rounded rsqrt, the store kernel's reserved slot 0.
StackedProfile sglang_dspark_stacked_profile();
// SGLang's fused path: the contract's rope, a lane butterfly, an approximate reciprocal, loc < 0
// skipped and slot 0 written.
StackedProfile sglang_dspark_fused_profile();

enum class StackedPolicy : std::uint8_t { kRope = 0, kReduction, kReciprocal, kCacheLoc };
inline constexpr std::array<StackedPolicy, 4> kAllStackedPolicies = {
    StackedPolicy::kRope, StackedPolicy::kReduction, StackedPolicy::kReciprocal, StackedPolicy::kCacheLoc};

// The alternative's number (0 the contract's) and the profile with another alternative.
int alternative_of(const StackedProfile& p, StackedPolicy policy);
int alternatives_of(StackedPolicy policy);  // 3 for the reduction, 2 otherwise
StackedProfile with_alternative(StackedProfile p, StackedPolicy policy, int alternative);

// The spec key ("reduction"), the title in reports ("K-norm reduction"), an alternative's name.
std::string_view policy_key(StackedPolicy policy);
std::string_view policy_title(StackedPolicy policy);
std::string_view alternative_name(StackedPolicy policy, int alternative);

// A named profile's name, else the policies that differ from the contract: "rope=fma-pair".
std::string stacked_profile_name(const StackedProfile& p);
// One line per policy: "K-norm reduction: unspecified (contract: sequential)".
std::string describe_stacked_profile(const StackedProfile& p);

// Reads "contract", "sglang-dspark-stacked", "sglang-dspark-fused", or
// "[name,]key=value[,key=value...]" with keys rope (contract|fma-pair), reduction
// (sequential|lane-tree|unspecified), reciprocal (rn|approx), cache-loc
// (skip-negative|slot0-reserved). Nothing, with `error` naming what is wrong, for anything else.
std::optional<StackedProfile> parse_stacked_profile(std::string_view spec, std::string* error = nullptr);

}  // namespace kvc
