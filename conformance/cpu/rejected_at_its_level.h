// rejected_at_its_level.h: the check the oracle's invalid-input suites make of a broken case, at
// both validation levels.
//
// A breaker names the lowest level that rejects its rule, and strict includes contract: a
// contract rule is rejected at both levels, a strict-only rule is accepted at kContract. A
// rejected call writes nothing into its outputs.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kvc/status.h"
#include "kvc/validate.h"

namespace kvc {

// `run(level, out)` runs the broken case at `level` into `out`, a copy of `before`, and returns
// its status; `written_into(before, out)` names what the call wrote into ("the backing"), or "".
template <typename Outputs, typename Run, typename WrittenInto>
void expect_rejected_at_its_level(ErrorCode code, ValidationLevel rule_level, const Outputs& before, Run&& run,
                                  WrittenInto&& written_into) {
  for (ValidationLevel level : {ValidationLevel::kContract, ValidationLevel::kStrict}) {
    Outputs out = before;
    const Status s = run(level, out);
    if (level == ValidationLevel::kStrict || rule_level == ValidationLevel::kContract) {
      EXPECT_EQ(s.code, code) << "level " << static_cast<int>(level) << ": got " << s.ToString();
      const std::string wrote = written_into(before, out);
      EXPECT_TRUE(wrote.empty()) << "a rejected call wrote into " << wrote;
    } else {
      EXPECT_TRUE(s.ok()) << "a strict-only rule rejected at the contract level: " << s.ToString();
    }
  }
}

}  // namespace kvc
