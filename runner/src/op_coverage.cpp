// op_coverage.cpp: see op_coverage.h.
#include "op_coverage.h"

namespace kvc::runner {

std::string_view op_status_name(OpStatus s) {
  switch (s) {
    case OpStatus::kCovered: return "covered";
    case OpStatus::kUncovered: return "INCOMPLETE";
    case OpStatus::kNotExported: return "not exported";
    case OpStatus::kNotDeclared: return "not declared supported";
    case OpStatus::kNotSelected: return "not selected";
    case OpStatus::kNotRun: return "not run";
    case OpStatus::kNoLibrary: return "no library";
  }
  return "?";
}

OpStatus op_status(const OpCoverage& c) {
  if (c.bytes_compared > 0) return OpStatus::kCovered;
  if (!c.declared) return OpStatus::kNoLibrary;
  if (c.declaration.exported == Export::kNotExported) return OpStatus::kNotExported;
  if (!c.declaration.declared_supported()) return OpStatus::kNotDeclared;
  if (!c.selected) return OpStatus::kNotSelected;
  if (!c.suites_ran) return OpStatus::kNotRun;
  return OpStatus::kUncovered;
}

}  // namespace kvc::runner
