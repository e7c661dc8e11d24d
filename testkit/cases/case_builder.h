// case_builder.h: building InsertCases from a few parameters, for the registry, tests, fuzzers.
//
// Geometry first (a CacheShape says format, pages, tokens per page and padding), then inputs (kv
// rows, slots, positions, table, scale), then the op: a KV-only case, or the legacy case that
// inserts the same rows with a dummy or real query.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc::testkit {

struct CacheShape {
  RecordFormat format = RecordFormat::kPacked584;
  std::int64_t num_blocks = 1;
  std::int64_t block_size = 16;
  std::int64_t page_padding_bytes = 0;  // after the dense page; a multiple of the element size
  std::int64_t row_gap_bytes = 0;       // full caches: between rows; a multiple of the element size
  std::int64_t base_offset_bytes = 0;   // where the cache starts inside its backing
};

CacheGeometry make_geometry(const CacheShape& shape);

// The upstream DSpark test's page stride: ceil(bs * row / 576) * 576 + 576 elements of the cache
// dtype, so every page is padded.
std::int64_t upstream_page_padding_bytes(RecordFormat f, std::int64_t block_size);

struct KvInputs {
  std::vector<std::uint16_t> kv;        // N x 512 bf16 (or f16 for the legacy f16 path)
  std::vector<std::int64_t> slots;      // M <= N
  std::vector<std::int64_t> positions;  // N
  std::vector<float> cos_sin;           // max_pos x 64
  float fp8_scale = 1.0f;
  DType kv_dtype = DType::kBF16;
};

InsertCase make_kv_only_case(const CacheShape& shape, const KvInputs& inputs);

struct QuerySpec {
  std::int64_t heads = 0;         // H
  std::int64_t padded_heads = 8;  // Hp (packed formats; 0 = KV-only through the legacy op)
  std::vector<std::uint16_t> q;   // N x H x 512; empty = zeros (the dummy query)
  float eps = 1e-20f;
  bool apply_q_norm = true;
  bool apply_q_rope = true;
  bool q_interleaved = false;
  float q_scale_inv = 1.0f;  // fp8_512
};

// The legacy case that inserts exactly the KV rows of `kv_only`.
InsertCase make_legacy_case(const InsertCase& kv_only, const QuerySpec& query);

// Deterministic randomness that does not depend on the standard library's distributions
// (their algorithms are unspecified), so a seed means the same case on every machine.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t bits() { return engine_(); }
  double uniform01() { return static_cast<double>(bits() >> 11) * 0x1p-53; }
  std::int64_t uniform(std::int64_t lo, std::int64_t hi);  // inclusive
  float normal();                                          // Box-Muller
  std::uint16_t bf16_normal();
  std::vector<std::int64_t> distinct(std::int64_t capacity, std::int64_t count);  // random subset, random order

 private:
  std::mt19937_64 engine_;
};

std::vector<std::uint16_t> random_bf16_rows(Rng& rng, std::int64_t rows);
// A [max_pos, 64] table of cos/sin of N(0,1) angles, like the upstream test's randn angles.
std::vector<float> random_cos_sin(Rng& rng, std::int64_t max_pos);

}  // namespace kvc::testkit
