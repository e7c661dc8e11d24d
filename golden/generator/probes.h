// probes.h: what the generator checks about torch before it computes a byte.
//
// The generator's arithmetic (exact_float.h, encodings.h) is only right if torch behaves as it
// assumes: its bf16 and fp16 casts round to nearest even with subnormals, in the scalar and the
// vectorised kernels alike; its float64 -> fp32 cast rounds to nearest even without flushing
// subnormals; float64 add, subtract, multiply and divide are single IEEE roundings (so TwoSum is
// exact); log2 and ceil give the contract's exponents on the worked examples; and, when the
// float8_e4m3fn dtype exists, its cast of a clamped value equals the integer encoder. Each probe
// runs at start-up; a difference throws ProbeFailure naming the probe, the input and both
// results, and no fixture is written (fail closed). Whether torch's own fp32 multiply-add fuses
// is measured and reported, not relied on: the generator never uses fp32 arithmetic.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kvc::golden_generator {

class ProbeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProbeReport {
  std::vector<std::string> passed;  // one line per probe: what it checked
  std::string e4m3_path;            // how e4m3 codes are made, and the float8 cross-check's result
};

// Throws ProbeFailure on the first difference.
ProbeReport run_probes();

}  // namespace kvc::golden_generator
