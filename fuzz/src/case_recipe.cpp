// case_recipe.cpp: recipe -> case, and classification (see case_recipe.h).
#include "kvc/fuzz/case_recipe.h"

#include <algorithm>
#include <cmath>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/cos_sin_cache.h"
#include "kvc/testkit/case_builder.h"

namespace kvc::fuzz {
namespace {

constexpr float kFp8Scales[] = {0.7f, 1.0f, 0.125f, 3.0f, 1.0f / 448.0f};
constexpr std::uint16_t kBf16NaN = 0x7FC0, kBf16PosInf = 0x7F80, kBf16NegInf = 0xFF80, kBf16NegZero = 0x8000;

int block_width(RecordFormat f) { return f == RecordFormat::kPacked528 ? 32 : 64; }
int nope_blocks(RecordFormat f) { return kNopeDim / block_width(f); }

std::uint16_t bf16(float x) { return oracle::float_to_bf16(x); }
float value(std::uint16_t b) { return oracle::bf16_to_float(b); }

void inject(std::vector<std::uint16_t>& kv, std::int64_t row, const Injection& inj, RecordFormat f, testkit::Rng& rng) {
  const int width = block_width(f);
  const int block = static_cast<int>(inj.block % static_cast<std::uint32_t>(nope_blocks(f)));
  std::uint16_t* x = kv.data() + row * kHeadDim + block * width;
  const int dim = static_cast<int>(inj.dim % static_cast<std::uint32_t>(width));
  switch (inj.cls) {
    case EdgeClass::kNaN: x[dim] = kBf16NaN; break;
    case EdgeClass::kPosInf: x[dim] = kBf16PosInf; break;
    case EdgeClass::kNegInf: x[dim] = kBf16NegInf; break;
    case EdgeClass::kPosZero: x[dim] = 0; break;
    case EdgeClass::kNegZero: x[dim] = kBf16NegZero; break;
    case EdgeClass::kSubnormal: x[dim] = static_cast<std::uint16_t>(1 + rng.uniform(0, 0x7E) + (rng.uniform(0, 1) ? 0x8000 : 0)); break;
    case EdgeClass::kZeroBlock:
      for (int i = 0; i < width; ++i) x[i] = rng.uniform(0, 3) == 0 ? kBf16NegZero : 0;
      break;
    case EdgeClass::kOutlierBlock:
      for (int i = 0; i < width; ++i) x[i] = bf16(rng.normal() * 1e-3f);
      x[dim] = bf16((rng.uniform(0, 1) ? 1.0f : -1.0f) * (500.0f + 100.0f * std::fabs(rng.normal())));
      break;
    case EdgeClass::kAmaxPow2:
    case EdgeClass::kAmaxAboveUlp:
    case EdgeClass::kAmaxBelowUlp: {
      const int k = std::clamp(inj.power, -12, 8);
      const float peak = std::ldexp(kFp8Max, k);  // 448 * 2^k is bf16-exact (1.75 * 2^(8+k))
      for (int i = 0; i < width; ++i) x[i] = bf16(peak * 0.25f * std::tanh(rng.normal()));  // |x| < peak / 4
      std::uint16_t bits = bf16(peak);
      if (inj.cls == EdgeClass::kAmaxAboveUlp) bits = static_cast<std::uint16_t>(bits + 1);
      if (inj.cls == EdgeClass::kAmaxBelowUlp) bits = static_cast<std::uint16_t>(bits - 1);
      x[dim] = static_cast<std::uint16_t>(bits | (rng.uniform(0, 1) ? 0x8000 : 0));
      break;
    }
  }
}

}  // namespace

const char* edge_class_name(EdgeClass c) {
  static const char* names[] = {"nan", "+inf", "-inf", "+0", "-0", "bf16-subnormal", "zero-block",
                                "single-outlier-block", "amax=448*2^k", "amax=448*2^k+1ulp", "amax=448*2^k-1ulp"};
  return names[static_cast<int>(c)];
}

std::vector<std::string> all_edge_class_names() {
  std::vector<std::string> v;
  for (int i = 0; i < kEdgeClassCount; ++i) v.push_back(edge_class_name(static_cast<EdgeClass>(i)));
  return v;
}

InsertCase build_case(const CaseRecipe& r) {
  testkit::Rng rng(r.seed);
  const RecordLayout& l = layout_of(r.format);
  const std::int64_t rows = r.tokens + r.dp_rows;
  testkit::CacheShape shape;
  shape.format = r.format;
  shape.block_size = r.block_size;
  shape.num_blocks = (r.tokens + r.block_size - 1) / r.block_size + r.extra_blocks;
  if (shape.num_blocks == 0) shape.num_blocks = 1;
  if (l.paged_regions) {
    const std::int64_t dense = l.dense_page_bytes(r.block_size);
    shape.page_padding_bytes = (kAlignment - dense % kAlignment) % kAlignment + kAlignment * r.page_padding_units;
  } else {
    shape.row_gap_bytes = kAlignment * r.row_gap_units;
    shape.page_padding_bytes = kAlignment * r.page_padding_units;
  }

  testkit::KvInputs in;
  in.slots = rng.distinct(shape.num_blocks * r.block_size, r.tokens);
  std::vector<std::int64_t> live_rows;
  for (std::int64_t t = 0; t < r.tokens; ++t) {
    const bool skipped = r.skip == SkipMode::kAll || (r.skip == SkipMode::kSome && rng.uniform(0, 3) == 0);
    if (skipped) in.slots[static_cast<std::size_t>(t)] = -1;
    else live_rows.push_back(t);
  }
  const std::int64_t max_pos = rows + r.max_pos_extra + 1;
  for (std::int64_t t = 0; t < rows; ++t) in.positions.push_back(rng.uniform(0, max_pos - 1));
  in.cos_sin = r.base10000_table ? oracle::make_cos_sin_cache(max_pos, kRopeDim) : testkit::random_cos_sin(rng, max_pos);
  in.kv = testkit::random_bf16_rows(rng, rows);
  if (!live_rows.empty())
    for (const Injection& inj : r.injections)
      inject(in.kv, live_rows[inj.row % live_rows.size()], inj, r.format, rng);
  in.fp8_scale = kFp8Scales[static_cast<std::size_t>(r.fp8_scale_choice) % std::size(kFp8Scales)];
  InsertCase c = testkit::make_kv_only_case(shape, in);

  if (r.op == InsertOp::kKvOnly) {
    if (r.fused_kv_norm) {
      std::vector<std::uint16_t> w(kHeadDim);
      for (auto& x : w) x = bf16(1.0f + 0.5f * rng.normal());
      c.kv_norm_weight = make_tensor_from(DType::kBF16, w, {kHeadDim});
      c.kv_norm_eps = 1e-6f;
    }
    return c;
  }
  testkit::QuerySpec q;
  if (is_packed(r.format)) {
    q.padded_heads = kSupportedHeadPadding[static_cast<std::size_t>(r.padded_heads_choice) % kSupportedHeadPadding.size()];
    q.heads = q.padded_heads == 0 ? r.heads : std::clamp<std::int64_t>(r.heads, 1, q.padded_heads);
  } else {
    q.padded_heads = 0;
    q.heads = std::clamp<std::int64_t>(r.heads, 1, 4);
  }
  q.q = testkit::random_bf16_rows(rng, rows * q.heads);
  q.eps = 1e-6f;
  q.apply_q_norm = r.apply_q_norm;
  q.apply_q_rope = r.apply_q_rope;
  q.q_interleaved = r.q_interleaved;
  q.q_scale_inv = 2.0f;
  return testkit::make_legacy_case(c, q);
}

std::vector<std::string> classify(const InsertCase& c) {
  std::vector<std::string> out;
  const auto format = format_of(c);
  if (!format) return out;
  out.push_back("format:" + std::string(layout_of(*format).name));
  out.push_back(c.op == InsertOp::kLegacy ? "op:legacy" : "op:kv-only");
  const std::int64_t m = c.num_inserted();
  std::int64_t live = 0;
  bool seen[kEdgeClassCount] = {};
  const int width = block_width(*format);
  for (std::int64_t t = 0; t < m; ++t) {
    if (c.slots.load<std::int64_t>(t) < 0) continue;
    ++live;
    for (int b = 0; b < nope_blocks(*format); ++b) {
      float amax = 0.0f, second = 0.0f;
      bool all_zero = true;
      std::uint16_t amax_bits = 0;
      for (int i = 0; i < width; ++i) {
        const std::uint16_t bits = c.kv.load<std::uint16_t>(t * kHeadDim + b * width + i);
        const float v = value(bits);
        if (std::isnan(v)) seen[static_cast<int>(EdgeClass::kNaN)] = true;
        else if (std::isinf(v)) seen[static_cast<int>(v > 0 ? EdgeClass::kPosInf : EdgeClass::kNegInf)] = true;
        if (bits == 0) seen[static_cast<int>(EdgeClass::kPosZero)] = true;
        if (bits == kBf16NegZero) seen[static_cast<int>(EdgeClass::kNegZero)] = true;
        if ((bits & 0x7F80) == 0 && (bits & 0x7F)) seen[static_cast<int>(EdgeClass::kSubnormal)] = true;
        if ((bits & 0x7FFF) != 0) all_zero = false;
        const float a = std::fabs(v);
        if (!std::isnan(a) && a > amax) {
          second = amax;
          amax = a;
          amax_bits = static_cast<std::uint16_t>(bits & 0x7FFF);
        } else if (!std::isnan(a) && a > second) {
          second = a;
        }
      }
      if (all_zero) seen[static_cast<int>(EdgeClass::kZeroBlock)] = true;
      if (std::isfinite(amax) && amax > 0 && second < amax / 64) seen[static_cast<int>(EdgeClass::kOutlierBlock)] = true;
      for (int k = -12; k <= 8; ++k) {
        const std::uint16_t peak = bf16(std::ldexp(kFp8Max, k));
        if (amax_bits == peak) seen[static_cast<int>(EdgeClass::kAmaxPow2)] = true;
        if (amax_bits == peak + 1) seen[static_cast<int>(EdgeClass::kAmaxAboveUlp)] = true;
        if (amax_bits == peak - 1) seen[static_cast<int>(EdgeClass::kAmaxBelowUlp)] = true;
      }
    }
  }
  for (int i = 0; i < kEdgeClassCount; ++i)
    if (seen[i]) out.push_back(edge_class_name(static_cast<EdgeClass>(i)));
  if (m == 0) out.push_back("tokens:zero");
  if (m >= kTokenCutoff) out.push_back("tokens:>=1024");
  if (m > 0 && live == 0) out.push_back("slots:all-skipped");
  if (live > 0 && live < m) out.push_back("slots:some-skipped");
  if (c.num_rows() > m) out.push_back("dp-padding");
  const std::int64_t bs = c.block_size;
  out.push_back((bs & (bs - 1)) == 0 ? "block-size:pow2" : "block-size:non-pow2");
  const RecordLayout& l = layout_of(*format);
  const std::int64_t dense = l.paged_regions ? l.dense_page_bytes(bs) : bs * c.cache.token_stride_bytes();
  if (c.cache.page_stride_bytes() > dense) out.push_back("page-padding");
  if (c.kv_norm_weight.present) out.push_back("fused-kv-norm");
  return out;
}

void record(Coverage& coverage, const std::vector<std::string>& classes) {
  for (const std::string& c : classes) ++coverage[c];
}

}  // namespace kvc::fuzz
