// options.cpp: mutation names (see options.h).
#include "kvc/oracle/options.h"

namespace kvc::oracle {
namespace {
struct Named {
  OracleMutation m;
  std::string_view name;
};
constexpr Named kMutations[] = {{OracleMutation::kNone, "none"},
                                {OracleMutation::kScalePadOne, "scale-pad-one"},
                                {OracleMutation::kTiesAwayFromZero, "ties-away-from-zero"}};
}  // namespace

std::string_view mutation_name(OracleMutation m) {
  for (const Named& n : kMutations)
    if (n.m == m) return n.name;
  return "?";
}

bool mutation_from_name(std::string_view name, OracleMutation* out) {
  for (const Named& n : kMutations) {
    if (n.name == name) {
      *out = n.m;
      return true;
    }
  }
  return false;
}

}  // namespace kvc::oracle
