// options.h: how an oracle op runs: validation level, implementation profile, and mutations.
//
// Mutations are deliberate defects for testing the tests: a fuzz campaign or a conformance diff
// must catch every one of them. They are off unless a test asks for one; nothing else reads them.
#pragma once

#include <cstdint>
#include <string_view>

#include "kvc/profile.h"
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
  // The policies the records are encoded under (docs/contract.md §6); default: the contract.
  // Its rsqrt policy is not the oracle's to apply: the oracle always rounds correctly, and a
  // backend that declares the approximation is checked row by row (testkit/approx_rsqrt.h).
  Profile profile = vllm_profile();
  OracleMutation mutation = OracleMutation::kNone;
  // Threads for large cases (parallel_rows.h): 0 = KVC_ORACLE_THREADS when set, else every
  // hardware thread. The bytes are the same for any count.
  int threads = 0;
};

}  // namespace kvc::oracle
