// bench_cases.cpp: building the benchmark's cases (see bench_cases.h).
#include "bench_cases.h"

#include <numeric>

#include "kvc/oracle/bf16.h"

namespace kvc::bench {
namespace {

// A trained RMSNorm weight sits near 1; a spread keeps the multiply from being the identity.
constexpr float kNormWeightSpread = 0.1f;
// Spare cos/sin rows past the last position, as the upstream test allocates (n + 16 rows).
constexpr std::int64_t kSpareTableRows = 16;

}  // namespace

BenchInputs make_bench_inputs(std::int64_t tokens, std::uint64_t seed) {
  testkit::Rng rng(seed);
  BenchInputs in;
  in.tokens = tokens;
  in.num_blocks = (kCacheSlotsPerToken * tokens + kBenchBlockSize - 1) / kBenchBlockSize;
  in.kv.kv = testkit::random_bf16_rows(rng, tokens);
  in.kv.slots = rng.distinct(in.num_blocks * kBenchBlockSize, tokens);
  in.kv.positions.resize(static_cast<std::size_t>(tokens));
  std::iota(in.kv.positions.begin(), in.kv.positions.end(), kFirstPosition);
  in.kv.cos_sin = testkit::random_cos_sin(rng, kFirstPosition + tokens + kSpareTableRows);
  in.kv.fp8_scale = kFp8Scale;
  in.kv_norm_weight.resize(kHeadDim);
  for (auto& w : in.kv_norm_weight) w = oracle::float_to_bf16(1.0f + kNormWeightSpread * rng.normal());
  return in;
}

testkit::CacheShape bench_cache_shape(RecordFormat format, std::int64_t num_blocks, bool padded_pages) {
  testkit::CacheShape s;
  s.format = format;
  s.num_blocks = num_blocks;
  s.block_size = kBenchBlockSize;
  s.page_padding_bytes = padded_pages ? testkit::upstream_page_padding_bytes(format, kBenchBlockSize) : 0;
  return s;
}

InsertCase bench_kv_only_case(const BenchInputs& in, RecordFormat format, bool padded_pages, bool fused_kv_norm) {
  InsertCase c = testkit::make_kv_only_case(bench_cache_shape(format, in.num_blocks, padded_pages), in.kv);
  if (fused_kv_norm) {
    c.kv_norm_weight = make_tensor_from(DType::kBF16, in.kv_norm_weight, {kHeadDim});
    c.kv_norm_eps = kEps;
  }
  return c;
}

InsertCase bench_legacy_case(const InsertCase& kv_only, std::int64_t heads) {
  InsertCase c = kv_only;
  c.op = InsertOp::kLegacy;
  c.kv_norm_weight = HostTensor{};
  const std::int64_t n = c.num_rows();
  const DType dt = c.kv.meta.dtype;
  c.q.meta = contiguous_meta(dt, {n, heads, kHeadDim});
  c.q.present = true;  // bytes stay empty: made on the device
  c.eps = kEps;
  c.apply_q_norm = true;
  c.apply_q_rope = true;
  c.q_interleaved = false;
  const RecordFormat f = *format_of(c);
  if (is_packed(f)) {
    c.q_out = contiguous_meta(dt, {n, heads, kHeadDim});
  } else if (f == RecordFormat::kFp8_512) {
    c.q_out = contiguous_meta(DType::kE4M3, {n, heads, kHeadDim});
    c.q_scale_inv = make_tensor_from(DType::kF32, std::vector<float>{kQScaleInv}, {1});
  } else {
    c.q_out = contiguous_meta(DType::kBF16, {n, heads, kHeadDim});  // q itself, rotated in place
  }
  return c;
}

}  // namespace kvc::bench
