// profile.cpp: profile names, policy tables and the spec parser (see profile.h).
#include "kvc/profile.h"

#include <vector>

namespace kvc {
namespace {

struct PolicyNames {
  Policy policy;
  std::string_view key;
  std::string_view title;
  std::array<std::string_view, kPolicyAlternatives> alternatives;
};

// One row per policy: its spec key, its title in reports, and its alternatives' names (0 first).
constexpr PolicyNames kPolicyNames[] = {
    {Policy::kRope, "rope", "rope", {"rotate", "none"}},
    {Policy::kClampOrder, "clamp", "clamp order", {"vllm", "sglang"}},
    {Policy::kInfBlock, "inf", "Inf block", {"vllm", "sglang"}},
    {Policy::kPadByte, "pad", "pad byte", {"write", "keep"}},
    {Policy::kExponent, "exponent", "scale exponent", {"log2f", "exact"}},
    {Policy::kFloorPlacement, "floor", "amax floor", {"before", "after"}},
    {Policy::kRsqrt, "rsqrt", "rsqrt", {"rn", "approx"}},
};

const PolicyNames& names_of(Policy policy) { return kPolicyNames[static_cast<std::size_t>(policy)]; }

struct NamedProfile {
  std::string_view name;
  Profile (*make)();
};
constexpr NamedProfile kNamedProfiles[] = {{"vllm", vllm_profile}, {"sglang-store", sglang_store_profile}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<Profile> fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return std::nullopt;
}

std::string known_keys() {
  std::string s;
  for (const PolicyNames& n : kPolicyNames) {
    s += (s.empty() ? "" : ", ") + std::string(n.key) + " (";
    for (int a = 0; a < kPolicyAlternatives; ++a) s += (a ? "|" : "") + std::string(n.alternatives[a]);
    s += ")";
  }
  return s;
}

}  // namespace

bool operator==(const Profile& a, const Profile& b) {
  for (Policy p : kAllPolicies)
    if (alternative_of(a, p) != alternative_of(b, p)) return false;
  return true;
}

Profile vllm_profile() { return Profile{}; }

Profile sglang_store_profile() {
  Profile p;
  p.rope = RopePolicy::kNone;
  p.clamp_order = ClampOrder::kMinThenMax;
  p.inf_block = InfBlockInverse::kNegativeInfinity;
  p.pad_byte = PadBytePolicy::kNotWritten;
  p.exponent = ExponentRule::kExact;
  return p;
}

int alternative_of(const Profile& p, Policy policy) {
  switch (policy) {
    case Policy::kRope: return static_cast<int>(p.rope);
    case Policy::kClampOrder: return static_cast<int>(p.clamp_order);
    case Policy::kInfBlock: return static_cast<int>(p.inf_block);
    case Policy::kPadByte: return static_cast<int>(p.pad_byte);
    case Policy::kExponent: return static_cast<int>(p.exponent);
    case Policy::kFloorPlacement: return static_cast<int>(p.amax_floor);
    case Policy::kRsqrt: return static_cast<int>(p.rsqrt);
  }
  return 0;
}

Profile with_alternative(Profile p, Policy policy, int alternative) {
  const auto a = static_cast<std::uint8_t>(alternative != 0);
  switch (policy) {
    case Policy::kRope: p.rope = static_cast<RopePolicy>(a); break;
    case Policy::kClampOrder: p.clamp_order = static_cast<ClampOrder>(a); break;
    case Policy::kInfBlock: p.inf_block = static_cast<InfBlockInverse>(a); break;
    case Policy::kPadByte: p.pad_byte = static_cast<PadBytePolicy>(a); break;
    case Policy::kExponent: p.exponent = static_cast<ExponentRule>(a); break;
    case Policy::kFloorPlacement: p.amax_floor = static_cast<AmaxFloor>(a); break;
    case Policy::kRsqrt: p.rsqrt = static_cast<RsqrtMode>(a); break;
  }
  return p;
}

std::string_view policy_key(Policy policy) { return names_of(policy).key; }
std::string_view policy_title(Policy policy) { return names_of(policy).title; }
std::string_view alternative_name(Policy policy, int alternative) {
  return names_of(policy).alternatives[alternative != 0 ? 1 : 0];
}

bool policy_applies(Policy policy, RecordFormat f) {
  switch (policy) {
    case Policy::kRope:
    case Policy::kRsqrt: return true;
    case Policy::kClampOrder: return f != RecordFormat::kBf16_512;
    case Policy::kInfBlock:
    case Policy::kExponent:
    case Policy::kFloorPlacement: return is_packed(f);
    case Policy::kPadByte: return f == RecordFormat::kPacked584;
  }
  return false;
}

std::string profile_name(const Profile& p) {
  for (const NamedProfile& n : kNamedProfiles)
    if (n.make() == p) return std::string(n.name);
  std::string s;
  for (Policy policy : kAllPolicies) {
    const int a = alternative_of(p, policy);
    if (a == 0) continue;
    s += (s.empty() ? "" : ",") + std::string(policy_key(policy)) + "=" + std::string(alternative_name(policy, a));
  }
  return s;
}

std::string describe_profile(const Profile& p) {
  std::string s;
  for (Policy policy : kAllPolicies) {
    const int a = alternative_of(p, policy);
    s += std::string(policy_title(policy)) + ": " + std::string(alternative_name(policy, a));
    if (a != 0) s += " (vllm: " + std::string(alternative_name(policy, 0)) + ")";
    s += "\n";
  }
  return s;
}

std::optional<Profile> parse_profile(std::string_view spec, std::string* error) {
  Profile p = vllm_profile();
  std::vector<Policy> given;
  bool first = true;
  if (trim(spec).empty()) return fail(error, "empty profile: give vllm, sglang-store or key=value items");
  while (true) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = trim(spec.substr(0, comma));
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      const NamedProfile* named = nullptr;
      for (const NamedProfile& n : kNamedProfiles)
        if (n.name == item) named = &n;
      if (named == nullptr)
        return fail(error, "unknown profile '" + std::string(item) + "' (named profiles: vllm, sglang-store)");
      if (!first) return fail(error, "a named profile ('" + std::string(item) + "') may only come first");
      p = named->make();
    } else {
      const std::string_view key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
      const PolicyNames* names = nullptr;
      for (const PolicyNames& n : kPolicyNames)
        if (n.key == key) names = &n;
      if (names == nullptr) return fail(error, "unknown policy '" + std::string(key) + "'; policies: " + known_keys());
      for (Policy g : given)
        if (g == names->policy) return fail(error, "policy '" + std::string(key) + "' given twice");
      given.push_back(names->policy);
      int alternative = -1;
      for (int a = 0; a < kPolicyAlternatives; ++a)
        if (names->alternatives[a] == value) alternative = a;
      if (alternative < 0)
        return fail(error, "unknown alternative '" + std::string(value) + "' of policy " + std::string(key) + " (" +
                               std::string(names->alternatives[0]) + "|" + std::string(names->alternatives[1]) + ")");
      p = with_alternative(p, names->policy, alternative);
    }
    first = false;
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return p;
}

}  // namespace kvc
