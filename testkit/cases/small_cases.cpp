// small_cases.cpp: see small_cases.h.
#include "testkit/cases/small_cases.h"

#include "testkit/cases/case_builder.h"

namespace kvc::testkit {

InsertCase small_valid_case(InsertOp op, RecordFormat format, std::uint64_t seed) {
  constexpr std::int64_t kRows = 6, kBlockSize = 16, kMaxPos = 32;
  Rng rng(seed);
  CacheShape shape{format, 2, kBlockSize, 32, is_packed(format) ? 0 : 16, 0};
  KvInputs in;
  in.kv = random_bf16_rows(rng, kRows);
  in.slots = rng.distinct(2 * kBlockSize, 4);
  in.slots[2] = -1;
  for (std::int64_t t = 0; t < kRows; ++t) in.positions.push_back(3 + t);
  in.cos_sin = random_cos_sin(rng, kMaxPos);
  in.fp8_scale = 0.7f;
  InsertCase c = make_kv_only_case(shape, in);
  if (op == InsertOp::kKvOnly) return c;
  QuerySpec q;
  q.heads = 2;
  q.padded_heads = 8;
  q.q = random_bf16_rows(rng, kRows * q.heads);
  q.eps = 1e-6f;
  q.q_scale_inv = 2.0f;
  return make_legacy_case(c, q);
}

}  // namespace kvc::testkit
