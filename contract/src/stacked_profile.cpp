// stacked_profile.cpp: the stacked op's policy names, named profiles and spec parser (see
// stacked_profile.h). The parser follows profile.cpp's rules (a named profile only first, a key
// once, items separated by commas) so that both specs read alike.
#include "kvc/stacked_profile.h"

#include <vector>

namespace kvc {
namespace {

struct StackedPolicyNames {
  StackedPolicy policy;
  std::string_view key;
  std::string_view title;
  std::array<std::string_view, 3> alternatives;  // 0 first; "" past the policy's last one
};

constexpr StackedPolicyNames kNames[] = {
    {StackedPolicy::kRope, "rope", "RoPE contraction", {"contract", "fma-pair", ""}},
    {StackedPolicy::kReduction, "reduction", "K-norm reduction", {"sequential", "lane-tree", "unspecified"}},
    {StackedPolicy::kReciprocal, "reciprocal", "K-norm reciprocal", {"rn", "approx", ""}},
    {StackedPolicy::kCacheLoc, "cache-loc", "cache_loc", {"skip-negative", "slot0-reserved", ""}},
};

const StackedPolicyNames& names_of(StackedPolicy policy) { return kNames[static_cast<std::size_t>(policy)]; }

struct NamedStackedProfile {
  std::string_view name;
  StackedProfile (*make)();
};
constexpr NamedStackedProfile kNamed[] = {{"contract", contract_stacked_profile},
                                          {"sglang-dspark-stacked", sglang_dspark_stacked_profile},
                                          {"sglang-dspark-fused", sglang_dspark_fused_profile}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<StackedProfile> fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return std::nullopt;
}

std::string alternatives_text(const StackedPolicyNames& n) {
  std::string s;
  for (int a = 0; a < alternatives_of(n.policy); ++a) s += (a ? "|" : "") + std::string(n.alternatives[a]);
  return s;
}

std::string known_keys() {
  std::string s;
  for (const StackedPolicyNames& n : kNames)
    s += (s.empty() ? "" : ", ") + std::string(n.key) + " (" + alternatives_text(n) + ")";
  return s;
}

std::string named_list() {
  std::string s;
  for (const NamedStackedProfile& n : kNamed) s += (s.empty() ? "" : ", ") + std::string(n.name);
  return s;
}

}  // namespace

bool operator==(const StackedProfile& a, const StackedProfile& b) {
  for (StackedPolicy p : kAllStackedPolicies)
    if (alternative_of(a, p) != alternative_of(b, p)) return false;
  return true;
}

StackedProfile contract_stacked_profile() { return StackedProfile{}; }

StackedProfile sglang_dspark_stacked_profile() {
  StackedProfile p;
  p.rope = StackedRope::kCudaFmaPair;
  p.reduction = KNormReduction::kUnspecified;
  p.reciprocal = KNormReciprocal::kCorrectlyRounded;  // docs/contract.md §6.2: a choice the issue leaves open
  p.cache_loc = CacheLocPolicy::kSlotZeroReserved;
  return p;
}

StackedProfile sglang_dspark_fused_profile() {
  StackedProfile p;
  p.rope = StackedRope::kContract;
  p.reduction = KNormReduction::kLaneTree;
  p.reciprocal = KNormReciprocal::kApproximate;
  p.cache_loc = CacheLocPolicy::kNegativeSkipped;
  return p;
}

int alternative_of(const StackedProfile& p, StackedPolicy policy) {
  switch (policy) {
    case StackedPolicy::kRope: return static_cast<int>(p.rope);
    case StackedPolicy::kReduction: return static_cast<int>(p.reduction);
    case StackedPolicy::kReciprocal: return static_cast<int>(p.reciprocal);
    case StackedPolicy::kCacheLoc: return static_cast<int>(p.cache_loc);
  }
  return 0;
}

int alternatives_of(StackedPolicy policy) { return policy == StackedPolicy::kReduction ? 3 : 2; }

StackedProfile with_alternative(StackedProfile p, StackedPolicy policy, int alternative) {
  const int last = alternatives_of(policy) - 1;
  const auto a = static_cast<std::uint8_t>(alternative < 0 ? 0 : alternative > last ? last : alternative);
  switch (policy) {
    case StackedPolicy::kRope: p.rope = static_cast<StackedRope>(a); break;
    case StackedPolicy::kReduction: p.reduction = static_cast<KNormReduction>(a); break;
    case StackedPolicy::kReciprocal: p.reciprocal = static_cast<KNormReciprocal>(a); break;
    case StackedPolicy::kCacheLoc: p.cache_loc = static_cast<CacheLocPolicy>(a); break;
  }
  return p;
}

std::string_view policy_key(StackedPolicy policy) { return names_of(policy).key; }
std::string_view policy_title(StackedPolicy policy) { return names_of(policy).title; }
std::string_view alternative_name(StackedPolicy policy, int alternative) {
  const int last = alternatives_of(policy) - 1;
  return names_of(policy).alternatives[static_cast<std::size_t>(alternative < 0      ? 0
                                                                : alternative > last ? last
                                                                                     : alternative)];
}

std::string stacked_profile_name(const StackedProfile& p) {
  for (const NamedStackedProfile& n : kNamed)
    if (n.make() == p) return std::string(n.name);
  std::string s;
  for (StackedPolicy policy : kAllStackedPolicies) {
    const int a = alternative_of(p, policy);
    if (a == 0) continue;
    s += (s.empty() ? "" : ",") + std::string(policy_key(policy)) + "=" + std::string(alternative_name(policy, a));
  }
  return s;
}

std::string describe_stacked_profile(const StackedProfile& p) {
  std::string s;
  for (StackedPolicy policy : kAllStackedPolicies) {
    const int a = alternative_of(p, policy);
    s += std::string(policy_title(policy)) + ": " + std::string(alternative_name(policy, a));
    if (a != 0) s += " (contract: " + std::string(alternative_name(policy, 0)) + ")";
    s += "\n";
  }
  return s;
}

std::optional<StackedProfile> parse_stacked_profile(std::string_view spec, std::string* error) {
  StackedProfile p = contract_stacked_profile();
  std::vector<StackedPolicy> given;
  bool first = true;
  if (trim(spec).empty()) return fail(error, "empty stacked profile: give " + named_list() + " or key=value items");
  while (true) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = trim(spec.substr(0, comma));
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      const NamedStackedProfile* named = nullptr;
      for (const NamedStackedProfile& n : kNamed)
        if (n.name == item) named = &n;
      if (named == nullptr)
        return fail(error, "unknown stacked profile '" + std::string(item) +
                               "' (named stacked profiles: " + named_list() + ")");
      if (!first) return fail(error, "a named stacked profile ('" + std::string(item) + "') may only come first");
      p = named->make();
    } else {
      const std::string_view key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
      const StackedPolicyNames* names = nullptr;
      for (const StackedPolicyNames& n : kNames)
        if (n.key == key) names = &n;
      if (names == nullptr)
        return fail(error, "unknown stacked policy '" + std::string(key) + "'; stacked policies: " + known_keys());
      for (StackedPolicy g : given)
        if (g == names->policy) return fail(error, "stacked policy '" + std::string(key) + "' given twice");
      given.push_back(names->policy);
      int alternative = -1;
      for (int a = 0; a < alternatives_of(names->policy); ++a)
        if (names->alternatives[static_cast<std::size_t>(a)] == value) alternative = a;
      if (alternative < 0)
        return fail(error, "unknown alternative '" + std::string(value) + "' of stacked policy " + std::string(key) +
                               " (" + alternatives_text(*names) + ")");
      p = with_alternative(p, names->policy, alternative);
    }
    first = false;
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return p;
}

}  // namespace kvc
