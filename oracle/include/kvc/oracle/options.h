// options.h: how an oracle op runs: validation level, scale-exponent profile, and mutations.
//
// Mutations are deliberate defects for testing the tests: a fuzz campaign or a conformance diff
// must catch every one of them. They are off unless a test asks for one; nothing else reads them.
#pragma once

#include <cstdint>
#include <string_view>

#include "kvc/oracle/ue8m0.h"
#include "kvc/validate.h"

namespace kvc::oracle {

enum class OracleMutation : std::uint8_t {
  kNone = 0,
  kScalePadOne = 1,       // packed584 scale pad byte written as 0x01 instead of 0x00
  kTiesAwayFromZero = 2,  // e4m3 ties rounded away from zero instead of to even
};
std::string_view mutation_name(OracleMutation m);
bool mutation_from_name(std::string_view name, OracleMutation* out);

struct OracleOptions {
  ValidationLevel level = ValidationLevel::kStrict;
  ExponentRule exponent_rule = ExponentRule::kDeviceLog2f;
  OracleMutation mutation = OracleMutation::kNone;
  // Threads for large cases (parallel_rows.h): 0 = KVC_ORACLE_THREADS when set, else every
  // hardware thread. The bytes are the same for any count.
  int threads = 0;
};

}  // namespace kvc::oracle
