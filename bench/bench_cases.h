// bench_cases.h: the benchmark's problems, built with the testkit's case builders.
//
// Inputs are what a serving engine hands the op: random N(0,1) bf16 rows, distinct random slots
// over a cache twice the token count (so the records land scattered, as after a few requests),
// consecutive positions, a random cos/sin table and the upstream test's padded page stride (or
// dense pages). One BenchInputs per token count serves every format and op of that size.
#pragma once

#include <cstdint>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "testkit/cases/case_builder.h"

namespace kvc::bench {

inline constexpr std::int64_t kBenchBlockSize = 256;    // the upstream DSpark test's block size
inline constexpr std::int64_t kCacheSlotsPerToken = 2;  // cache capacity over inserted tokens
inline constexpr std::int64_t kFirstPosition = 7;       // the upstream test's position offset
inline constexpr float kFp8Scale = 0.7f;                // the upstream test's per-tensor scale
inline constexpr float kQScaleInv = 1.0f;
inline constexpr float kEps = 1e-6f;

struct BenchInputs {
  std::int64_t tokens = 0;
  std::int64_t num_blocks = 0;                // pages of kBenchBlockSize tokens
  testkit::KvInputs kv;                       // N rows, N distinct slots (no -1), N positions, cos/sin table
  std::vector<std::uint16_t> kv_norm_weight;  // 512 bf16, around 1 like a trained norm weight
};

BenchInputs make_bench_inputs(std::int64_t tokens, std::uint64_t seed);

testkit::CacheShape bench_cache_shape(RecordFormat format, std::int64_t num_blocks, bool padded_pages);

// The KV-only case; with `fused_kv_norm` the kv_norm weight is attached (kv_norm fused in front).
InsertCase bench_kv_only_case(const BenchInputs& in, RecordFormat format, bool padded_pages, bool fused_kv_norm);

// The legacy ("dummy query") case inserting the same rows with `heads` Q heads, padded to the same
// count for packed formats (Hp = H). Only q's metadata is set, not its bytes: a [262144, 128, 512]
// query is 32 GiB, so the benchmark fills q on the device instead. The shapes are
// testkit::make_legacy_case's (the unit test checks it on a small case).
InsertCase bench_legacy_case(const InsertCase& kv_only, std::int64_t heads);

}  // namespace kvc::bench
