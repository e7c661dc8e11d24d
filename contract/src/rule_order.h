// rule_order.h: the order in which every op's validator applies its rules (private to
// kvc::contract; docs/contract.md §5).
//
// Hostile metadata is rejected first, at every level and with either ValueAccess, before any
// extent is computed from it; then, when values are readable, the harness rule that every buffer
// covers its metadata; then the rules the upstream op checks (kContract); then the rules it does
// not (kStrict); last, when values are readable, the value rules without which even the oracle
// would read or write out of bounds. The first violated rule wins, so this order is part of what
// an op answers: the insert, store and stacked validators share it instead of each spelling it.
#pragma once

#include "kvc/status.h"
#include "kvc/validate.h"

namespace kvc::detail {

template <typename Case>
struct RuleSteps {
  Status (*metadata_well_formed)(const Case&);
  Status (*inputs_cover)(const Case&);
  Status (*contract)(const Case&);
  Status (*strict)(const Case&, ValueAccess);
  Status (*values)(const Case&, ValidationLevel);  // rules on the values, at every level
};

template <typename Case>
Status validate_in_rule_order(const Case& c, ValidationLevel level, ValueAccess access, const RuleSteps<Case>& steps) {
  const bool values = access == ValueAccess::kMetadataAndValues;
  if (Status s = steps.metadata_well_formed(c); !s.ok()) return s;
  if (values) {
    if (Status s = steps.inputs_cover(c); !s.ok()) return s;
  }
  if (Status s = steps.contract(c); !s.ok()) return s;
  if (level == ValidationLevel::kStrict) {
    if (Status s = steps.strict(c, access); !s.ok()) return s;
  }
  return values ? steps.values(c, level) : Status::Ok();
}

}  // namespace kvc::detail
