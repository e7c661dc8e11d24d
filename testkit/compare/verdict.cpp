// verdict.cpp: see verdict.h.
#include "testkit/compare/verdict.h"

namespace kvc::testkit {

std::string_view verdict_kind_name(VerdictKind k) {
  switch (k) {
    case VerdictKind::kMatch: return "match";
    case VerdictKind::kRejectedAlike: return "rejected alike";
    case VerdictKind::kMismatch: return "mismatch";
    case VerdictKind::kStatusDiffers: return "status differs";
    case VerdictKind::kWroteWhenRejected: return "wrote when rejected";
    case VerdictKind::kWrongPath: return "wrong path";
  }
  return "?";
}

}  // namespace kvc::testkit
