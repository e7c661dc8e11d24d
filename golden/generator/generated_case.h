// generated_case.h: one fixture's problem and answer as the generator holds them.
//
// Plain data in the generator's own terms: the tensors a manifest records (dtype by its
// case_fields name, sizes, strides, bytes), the cache geometry and the op's flags, and the
// expected bytes. The manifest writer maps it onto the shared field list (case_fields.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "generator_constants.h"

namespace kvc::golden_generator {

struct GenTensor {
  bool present = false;
  std::string dtype;  // case_fields::kDTypeCodes name: "bf16", "i64", ...
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::vector<std::uint8_t> bytes;  // contiguous, element 0 at byte 0
};

struct GenMeta {
  std::string dtype;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
};

struct GenCache {
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;
  std::int64_t stride0 = 0;  // elements of the cache dtype
  std::int64_t stride1 = 0;
  std::int64_t offset_bytes = 0;
  std::int64_t backing_bytes() const { return offset_bytes + num_blocks * stride0 * layout(format).element_bytes; }
  Format format = Format::kPacked584;
};

enum class GenOp : std::uint8_t { kKvOnly, kLegacy };

struct GenCase {
  GenOp op = GenOp::kKvOnly;
  GenTensor kv, slots, positions, cos_sin, fp8_scale;
  GenCache cache;
  GenTensor q, q_scale_inv;
  std::optional<GenMeta> q_out;  // legacy only
  float eps = 1e-6f;
  bool apply_q_norm = true;
  bool apply_q_rope = true;
  bool q_interleaved = false;
  GenTensor kv_norm_weight;
  float kv_norm_eps = 1e-6f;
};

struct GenExpected {
  std::uint8_t canary = 0;
  std::vector<std::uint8_t> cache;  // the whole backing, cache.backing_bytes() long
  std::vector<std::uint8_t> q_out;  // q_out's bytes (empty when the op writes none)
};

}  // namespace kvc::golden_generator
