// fixture_catalog.h: the fixtures the generator makes, and the case each one describes.
//
// Every op x format of docs/contract.md §4: the KV-only insert in all four formats with and
// without kv_norm; the legacy op on both packed formats with Hp 0, 8 and 64, each Q flag off in
// turn (q_norm, q_rope) or on (interleaved), and fp16; the full-cache Q paths (fp8 and bf16,
// with and without q-norm, fp8 with fp16). All are small: a few pages with padding, block sizes
// that are not all powers of two, negative slots (-1 and -2^62), data-parallel padding rows
// (slot_mapping shorter than kv, filled with NaN and given out-of-range positions, which must
// never be read) and rows of edge values (fixture_inputs.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "encodings.h"
#include "generated_case.h"

namespace kvc::golden_generator {

struct FixtureSpec {
  std::string name;  // file stem
  std::string description;
  std::uint64_t seed = 0;
  GenOp op = GenOp::kKvOnly;
  Format format = Format::kPacked584;
  Storage16 storage = Storage16::kBf16;
  bool kv_norm = false;
  std::int64_t rows = 10;     // N
  std::int64_t inserted = 8;  // M: rows M..N-1 are data-parallel padding
  std::int64_t block_size = 4;
  std::int64_t num_blocks = 3;
  std::int64_t page_padding_bytes = 48;  // beyond the dense page rounded up to 16 bytes
  std::int64_t row_gap_bytes = 32;       // full caches: bytes between rows
  std::int64_t max_pos = 16;
  std::int64_t heads = 0;         // H
  std::int64_t padded_heads = 0;  // Hp (packed legacy)
  bool q_norm = true, q_rope = true, interleaved = false;
  float eps = 1e-6f;
  float kv_norm_eps = 1e-6f;
  float fp8_scale = 0.7f;
  float q_scale_inv = 1.3f;
};

std::vector<FixtureSpec> fixture_catalog();

// The inputs of a spec, and the output shapes (q_out); expected bytes come from compute_expected.
GenCase build_case(const FixtureSpec& spec);

}  // namespace kvc::golden_generator
