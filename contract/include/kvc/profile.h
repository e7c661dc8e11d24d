// profile.h: implementation profiles, sets of independent policies (docs/contract.md §6): the
// vocabulary in which a kernel library declares its choices. The oracle implements each policy.
//
// Real kernels for the same records differ from the contract in a few deliberate choices. Each
// choice is a policy with two alternatives: 0 is the contract's (profile `vllm`, the upstream vLLM
// kernel byte for byte), 1 is the other (who uses it: docs/contract.md §6.1). The oracle runs under
// any profile (OracleOptions::profile), so a kernel is checked byte for byte against the oracle
// under the profile it declares, and a mismatch can be explained by the policies it follows
// (testkit/policy_report.h). The primitives' own enums carry the alternatives where the primitive
// lives (ClampOrder in fp8_e4m3.h, ExponentRule, AmaxFloor and InfBlockInverse in ue8m0.h,
// RsqrtMode in contract.h); the record-level ones are here.
//
// A profile has a name: `vllm`, `sglang-store`, or a spec that composes one policy by policy,
// "rope=none,clamp=sglang" (the policies not named keep vllm's; a named profile may come first:
// "sglang-store,pad=write"). parse_profile() reads every form; profile_name() writes the
// shortest, and parse_profile(profile_name(p)) == p.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvc/contract.h"

namespace kvc {

// The order of the e4m3 clamp's min and max (docs/contract.md §6.1): it decides where NaN lands,
// and nothing else (the two orders agree on every other input).
enum class ClampOrder : std::uint8_t {
  kMaxThenMin = 0,  // fminf(fmaxf(v, -448), 448): NaN -> -448 -> 0xFE (the contract, profile vllm)
  kMinThenMax = 1,  // fmaxf(fminf(v, 448), -448): fminf returns 448 for NaN -> 0x7E (SGLang)
};

// How the UE8M0 scale exponent E is computed (docs/contract.md §2.4): the device's log2f, or exactly.
enum class ExponentRule : std::uint8_t { kDeviceLog2f = 0, kExact = 1 };

// Where the 1e-4 amax floor applies (docs/contract.md §6.1).
enum class AmaxFloor : std::uint8_t {
  kBeforeDivide = 0,  // q = fl(max(amax, 1e-4) / 448): the contract (profile vllm)
  kAfterDivide = 1,   // q = max(fl(amax / 448), 1e-4): differs when fl(amax / 448) <= 2^-14
};

// The inverse scale of a block holding +-Inf (E = +Inf, scale byte 0xFF).
enum class InfBlockInverse : std::uint8_t {
  kZero = 0,              // inv = 2^-E = 0: finite elements -> +-0, the Inf -> NaN (the contract)
  kNegativeInfinity = 1,  // inv = -Inf (bits 0xFF800000, 2^-E built from the bits of E = 128): SGLang
};

// Whether the op rotates the KV rows' dims 448..511, and how packed584 stores them.
enum class RopePolicy : std::uint8_t {
  kRotate = 0,  // GPT-J RoPE (docs/contract.md §2.6), then bf() of every dim (NaN -> 0x7FFF)
  kNone = 1,    // rows arrive already rotated: no rotation, packed584 stores the input bits (SGLang)
};

// Byte 7 of a packed584 scale group.
enum class PadBytePolicy : std::uint8_t {
  kWritten = 0,     // written 0x00 on every insert (the contract)
  kNotWritten = 1,  // left as it was (SGLang, whose pool starts zero-filled)
};

struct Profile {
  RopePolicy rope = RopePolicy::kRotate;
  ClampOrder clamp_order = ClampOrder::kMaxThenMin;
  InfBlockInverse inf_block = InfBlockInverse::kZero;
  PadBytePolicy pad_byte = PadBytePolicy::kWritten;
  ExponentRule exponent = ExponentRule::kDeviceLog2f;
  AmaxFloor amax_floor = AmaxFloor::kBeforeDivide;
  RsqrtMode rsqrt = RsqrtMode::kCorrectlyRounded;
};

bool operator==(const Profile& a, const Profile& b);
inline bool operator!=(const Profile& a, const Profile& b) { return !(a == b); }

// The contract (every policy's alternative 0).
Profile vllm_profile();
// SGLang's fused_store_cache as measured on the H200: rope none, clamp and Inf block SGLang's,
// pad byte not written, exact exponent (docs/contract.md §6.2).
Profile sglang_store_profile();

enum class Policy : std::uint8_t { kRope = 0, kClampOrder, kInfBlock, kPadByte, kExponent, kFloorPlacement, kRsqrt };
inline constexpr std::array<Policy, 7> kAllPolicies = {Policy::kRope,    Policy::kClampOrder, Policy::kInfBlock,
                                                       Policy::kPadByte, Policy::kExponent,   Policy::kFloorPlacement,
                                                       Policy::kRsqrt};
// Every policy has two alternatives: 0 (the contract's) and 1.
inline constexpr int kPolicyAlternatives = 2;

// 0 or 1.
int alternative_of(const Profile& p, Policy policy);
Profile with_alternative(Profile p, Policy policy, int alternative);

// The spec key ("clamp"), the title reports use ("clamp order"), and an alternative's name
// ("sglang"). Keys and names are what parse_profile() reads.
std::string_view policy_key(Policy policy);
std::string_view policy_title(Policy policy);
std::string_view alternative_name(Policy policy, int alternative);

// Whether the policy can change a byte of a record of format f. (rsqrt changes norm rows of any
// format; the exponent rule only shows for amax values that no bf16 or fp16 input produces.)
bool policy_applies(Policy policy, RecordFormat f);

// "vllm", "sglang-store", or the policies that differ from vllm: "clamp=sglang,inf=sglang".
std::string profile_name(const Profile& p);
// One line per policy: "rope: none (vllm: rotate)", for reports.
std::string describe_profile(const Profile& p);

// Reads "vllm", "sglang-store", or "[name,]key=value[,key=value...]" with keys rope (rotate|none),
// clamp (vllm|sglang), inf (vllm|sglang), pad (write|keep), exponent (log2f|exact), floor
// (before|after), rsqrt (rn|approx); spaces around items are ignored. Nothing, with `error` set
// to what is wrong (an unknown name, key or value, a key given twice), for anything else.
std::optional<Profile> parse_profile(std::string_view spec, std::string* error = nullptr);

}  // namespace kvc
