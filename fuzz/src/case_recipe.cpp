// case_recipe.cpp: recipe -> case, and classification (see case_recipe.h).
#include "kvc/fuzz/case_recipe.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/cos_sin_cache.h"
#include "kvc/oracle/storage16.h"
#include "kvc/resolved_case.h"
#include "testkit/cases/case_builder.h"

namespace kvc::fuzz {
namespace {

constexpr float kFp8Scales[] = {0.7f, 1.0f, 0.125f, 3.0f, 1.0f / 448.0f};

// The special bit patterns of a 16-bit storage type (bf16, or f16 on the legacy fp16 path).
struct Bits16 {
  std::uint16_t nan, pos_inf, neg_inf, neg_zero, exponent_mask, mantissa_mask;
  int max_amax_power;  // largest k with 448 * 2^k and its upper neighbour finite
};
constexpr Bits16 kBf16Bits{0x7FC0, 0x7F80, 0xFF80, 0x8000, 0x7F80, 0x007F, 8};
constexpr Bits16 kF16Bits{0x7E00, 0x7C00, 0xFC00, 0x8000, 0x7C00, 0x03FF, 7};  // 448 * 2^7 = 57344 < 65504
const Bits16& bits16(DType dt) { return dt == DType::kF16 ? kF16Bits : kBf16Bits; }
constexpr int kMinAmaxPower = -12;

int block_width(RecordFormat f) { return f == RecordFormat::kPacked528 ? 32 : 64; }
int nope_blocks(RecordFormat f) { return kNopeDim / block_width(f); }
int row_blocks(RecordFormat f) { return kHeadDim / block_width(f); }  // the RoPE dims' blocks too

std::uint16_t narrow(float x, DType dt) { return oracle::narrow16(x, dt); }
float widen(std::uint16_t b, DType dt) { return oracle::widen16(b, dt); }

bool is_subnormal(std::uint16_t bits, const Bits16& p) {
  return (bits & p.exponent_mask) == 0 && (bits & p.mantissa_mask) != 0;
}

// Injections reach every block of the row: the NoPE quantization blocks and the RoPE dims
// (packed584's bf16 region, packed528's last two blocks, the full caches' last 64 dims).
void inject(std::vector<std::uint16_t>& kv, std::int64_t row, const Injection& inj, RecordFormat f, DType dt,
            testkit::Rng& rng) {
  const Bits16& p = bits16(dt);
  const int width = block_width(f);
  const int block = static_cast<int>(inj.block % static_cast<std::uint32_t>(row_blocks(f)));
  std::uint16_t* x = kv.data() + row * kHeadDim + block * width;
  const int dim = static_cast<int>(inj.dim % static_cast<std::uint32_t>(width));
  switch (inj.cls) {
    case EdgeClass::kNaN: x[dim] = p.nan; break;
    case EdgeClass::kPosInf:
    case EdgeClass::kNegInf:
      x[dim] = inj.cls == EdgeClass::kPosInf ? p.pos_inf : p.neg_inf;
      // Half the time a +-0 shares the block: the Inf block policies differ most there (under
      // `vllm` it keeps its sign, under `sglang` it becomes NaN, docs/contract.md §6.1).
      if (width > 1 && rng.uniform(0, 1) == 0)
        x[(dim + 1 + static_cast<int>(rng.uniform(0, width - 2))) % width] = rng.uniform(0, 1) ? p.neg_zero : 0;
      break;
    case EdgeClass::kPosZero: x[dim] = 0; break;
    case EdgeClass::kNegZero: x[dim] = p.neg_zero; break;
    case EdgeClass::kSubnormal:
      x[dim] = static_cast<std::uint16_t>(1 + rng.uniform(0, p.mantissa_mask - 1) + (rng.uniform(0, 1) ? 0x8000 : 0));
      break;
    case EdgeClass::kZeroBlock:
      for (int i = 0; i < width; ++i) x[i] = rng.uniform(0, 3) == 0 ? p.neg_zero : 0;
      break;
    case EdgeClass::kOutlierBlock:
      for (int i = 0; i < width; ++i) x[i] = narrow(rng.normal() * 1e-3f, dt);
      x[dim] = narrow((rng.uniform(0, 1) ? 1.0f : -1.0f) * (500.0f + 100.0f * std::fabs(rng.normal())), dt);
      break;
    case EdgeClass::kAmaxPow2:
    case EdgeClass::kAmaxAboveUlp:
    case EdgeClass::kAmaxBelowUlp: {
      const int k = std::clamp(inj.power, kMinAmaxPower, p.max_amax_power);
      const float peak = std::ldexp(kFp8Max, k);  // 448 * 2^k is exact in bf16 and f16 (1.75 * 2^(8+k))
      for (int i = 0; i < width; ++i) x[i] = narrow(peak * 0.25f * std::tanh(rng.normal()), dt);  // |x| < peak / 4
      std::uint16_t bits = narrow(peak, dt);
      if (inj.cls == EdgeClass::kAmaxAboveUlp) bits = static_cast<std::uint16_t>(bits + 1);
      if (inj.cls == EdgeClass::kAmaxBelowUlp) bits = static_cast<std::uint16_t>(bits - 1);
      x[dim] = static_cast<std::uint16_t>(bits | (rng.uniform(0, 1) ? 0x8000 : 0));
      break;
    }
  }
}

std::vector<std::uint16_t> random_rows(testkit::Rng& rng, std::int64_t rows, DType dt) {
  if (dt == DType::kBF16) return testkit::random_bf16_rows(rng, rows);
  std::vector<std::uint16_t> v(static_cast<std::size_t>(rows * kHeadDim));
  for (auto& x : v) x = narrow(rng.normal(), dt);
  return v;
}

}  // namespace

const char* edge_class_name(EdgeClass c) {
  static const char* names[] = {"nan",
                                "+inf",
                                "-inf",
                                "+0",
                                "-0",
                                "bf16-subnormal",
                                "zero-block",
                                "single-outlier-block",
                                "amax=448*2^k",
                                "amax=448*2^k+1ulp",
                                "amax=448*2^k-1ulp"};
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

  // fp16 exists on the legacy op only, and not for the bf16 full cache (docs/contract.md §4).
  const DType dt =
      r.fp16 && r.op == InsertOp::kLegacy && r.format != RecordFormat::kBf16_512 ? DType::kF16 : DType::kBF16;
  testkit::KvInputs in;
  in.kv_dtype = dt;
  in.slots = rng.distinct(shape.num_blocks * r.block_size, r.tokens);
  std::vector<std::int64_t> live_rows;
  for (std::int64_t t = 0; t < r.tokens; ++t) {
    const bool skipped = r.skip == SkipMode::kAll || (r.skip == SkipMode::kSome && rng.uniform(0, 3) == 0);
    if (skipped)
      in.slots[static_cast<std::size_t>(t)] = -1;
    else
      live_rows.push_back(t);
  }
  const std::int64_t max_pos = rows + r.max_pos_extra + 1;
  for (std::int64_t t = 0; t < rows; ++t) in.positions.push_back(rng.uniform(0, max_pos - 1));
  in.cos_sin =
      r.base10000_table ? oracle::make_cos_sin_cache(max_pos, kRopeDim) : testkit::random_cos_sin(rng, max_pos);
  in.kv = random_rows(rng, rows, dt);
  if (!live_rows.empty())
    for (const Injection& inj : r.injections)
      inject(in.kv, live_rows[inj.row % live_rows.size()], inj, r.format, dt, rng);
  in.fp8_scale = kFp8Scales[static_cast<std::size_t>(r.fp8_scale_choice) % std::size(kFp8Scales)];
  InsertCase c = testkit::make_kv_only_case(shape, in);

  if (r.op == InsertOp::kKvOnly) {
    if (r.fused_kv_norm) {
      std::vector<std::uint16_t> w(kHeadDim);
      for (auto& x : w) x = narrow(1.0f + 0.5f * rng.normal(), DType::kBF16);
      c.kv_norm_weight = make_tensor_from(DType::kBF16, w, {kHeadDim});
      c.kv_norm_eps = 1e-6f;
    }
    return c;
  }
  testkit::QuerySpec q;
  if (is_packed(r.format)) {
    q.padded_heads =
        kSupportedHeadPadding[static_cast<std::size_t>(r.padded_heads_choice) % kSupportedHeadPadding.size()];
    q.heads = q.padded_heads == 0 ? r.heads : std::clamp<std::int64_t>(r.heads, 1, q.padded_heads);
  } else {
    q.padded_heads = 0;
    q.heads = std::clamp<std::int64_t>(r.heads, 1, 4);
  }
  q.q = random_rows(rng, rows * q.heads, dt);
  q.eps = 1e-6f;
  q.apply_q_norm = r.apply_q_norm;
  q.apply_q_rope = r.apply_q_rope;
  q.q_interleaved = r.q_interleaved;
  q.q_scale_inv = 2.0f;
  return testkit::make_legacy_case(c, q);
}

namespace {

// What the live rows' values hold: edge classes of the NoPE blocks, specials in the RoPE dims.
struct ValueClasses {
  bool seen[kEdgeClassCount] = {};
  bool rope_nan = false, rope_inf = false, rope_neg_zero = false, rope_subnormal = false;
  bool inf_block_zero = false;  // a packed block holding +-Inf and a +-0 (the Inf block policy's sharpest case)

  void mark(EdgeClass e) { seen[static_cast<int>(e)] = true; }
};

void classify_rope_dims(const InsertCase& c, std::int64_t t, ValueClasses& v) {
  const DType dt = c.kv.meta.dtype;
  const Bits16& p = bits16(dt);
  for (int d = kNopeDim; d < kHeadDim; ++d) {
    const std::uint16_t bits = c.kv.load<std::uint16_t>(t * kHeadDim + d);
    const float x = widen(bits, dt);
    v.rope_nan |= std::isnan(x);
    v.rope_inf |= std::isinf(x);
    v.rope_neg_zero |= bits == p.neg_zero;
    v.rope_subnormal |= is_subnormal(bits, p);
  }
}

// The amax classes of a block whose largest magnitude has the bits `amax_bits`.
void classify_amax(std::uint16_t amax_bits, DType dt, ValueClasses& v) {
  for (int k = kMinAmaxPower; k <= bits16(dt).max_amax_power; ++k) {
    const std::uint16_t peak = narrow(std::ldexp(kFp8Max, k), dt);
    if (amax_bits == peak) v.mark(EdgeClass::kAmaxPow2);
    if (amax_bits == peak + 1) v.mark(EdgeClass::kAmaxAboveUlp);
    if (amax_bits == peak - 1) v.mark(EdgeClass::kAmaxBelowUlp);
  }
}

void classify_nope_block(const InsertCase& c, std::int64_t t, int b, RecordFormat f, ValueClasses& v) {
  const DType dt = c.kv.meta.dtype;
  const Bits16& p = bits16(dt);
  const int width = block_width(f);
  float amax = 0.0f, second = 0.0f;
  bool all_zero = true, has_inf = false, has_zero = false;
  std::uint16_t amax_bits = 0;
  for (int i = 0; i < width; ++i) {
    const std::uint16_t bits = c.kv.load<std::uint16_t>(t * kHeadDim + b * width + i);
    const float x = widen(bits, dt);
    if (std::isnan(x))
      v.mark(EdgeClass::kNaN);
    else if (std::isinf(x))
      v.mark(x > 0 ? EdgeClass::kPosInf : EdgeClass::kNegInf);
    has_inf |= std::isinf(x);
    has_zero |= (bits & 0x7FFF) == 0;
    if (bits == 0) v.mark(EdgeClass::kPosZero);
    if (bits == p.neg_zero) v.mark(EdgeClass::kNegZero);
    if (is_subnormal(bits, p)) v.mark(EdgeClass::kSubnormal);
    if ((bits & 0x7FFF) != 0) all_zero = false;
    const float a = std::fabs(x);
    if (!std::isnan(a) && a > amax) {
      second = amax;
      amax = a;
      amax_bits = static_cast<std::uint16_t>(bits & 0x7FFF);
    } else if (!std::isnan(a) && a > second) {
      second = a;
    }
  }
  if (all_zero) v.mark(EdgeClass::kZeroBlock);
  v.inf_block_zero |= is_packed(f) && has_inf && has_zero;
  if (std::isfinite(amax) && amax > 0 && second < amax / 64) v.mark(EdgeClass::kOutlierBlock);
  classify_amax(amax_bits, dt, v);
}

// Every live row (t < M, slot >= 0): its RoPE dims and its NoPE blocks.
ValueClasses classify_values(const InsertCase& c, RecordFormat f) {
  ValueClasses v;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    if (c.slots.load<std::int64_t>(t) < 0) continue;
    classify_rope_dims(c, t, v);
    for (int b = 0; b < nope_blocks(f); ++b) classify_nope_block(c, t, b, f, v);
  }
  return v;
}

// The classes of the case's shape: token count, skipped slots, DP padding, block size, page
// padding, the fused kv_norm.
void classify_shape(const InsertCase& c, const ResolvedInsertCase& r, std::vector<std::string>& out) {
  const std::int64_t m = r.inserted, live = r.live_rows;
  if (m == 0) out.push_back("tokens:zero");
  if (m >= kTokenCutoff) out.push_back("tokens:>=1024");
  if (m > 0 && live == 0) out.push_back("slots:all-skipped");
  if (live > 0 && live < m) out.push_back("slots:some-skipped");
  if (c.num_rows() > m) out.push_back("dp-padding");
  const std::int64_t bs = c.block_size;
  out.push_back((bs & (bs - 1)) == 0 ? "block-size:pow2" : "block-size:non-pow2");
  const RecordLayout& l = r.layout;
  const std::int64_t dense = l.paged_regions ? l.dense_page_bytes(bs) : bs * c.cache.token_stride_bytes();
  if (c.cache.page_stride_bytes() > dense) out.push_back("page-padding");
  if (c.kv_norm_weight.present) out.push_back("fused-kv-norm");
}

}  // namespace

std::vector<std::string> classify(const InsertCase& c) {
  std::vector<std::string> out;
  const std::optional<ResolvedInsertCase> resolved = resolve(c);
  if (!resolved) return out;
  out.push_back("format:" + std::string(resolved->layout.name));
  out.push_back(c.op == InsertOp::kLegacy ? "op:legacy" : "op:kv-only");
  if (c.kv.meta.dtype == DType::kF16) out.push_back("kv:f16");
  const ValueClasses v = classify_values(c, resolved->format);
  if (v.rope_nan) out.push_back("rope-dims:nan");
  if (v.rope_inf) out.push_back("rope-dims:inf");
  if (v.rope_neg_zero) out.push_back("rope-dims:-0");
  if (v.rope_subnormal) out.push_back("rope-dims:subnormal");
  if (v.inf_block_zero) out.push_back("inf-block:zero");
  for (int i = 0; i < kEdgeClassCount; ++i)
    if (v.seen[i]) out.push_back(edge_class_name(static_cast<EdgeClass>(i)));
  classify_shape(c, *resolved, out);
  return out;
}

void record(Coverage& coverage, const std::vector<std::string>& classes) {
  for (const std::string& c : classes) ++coverage[c];
}

}  // namespace kvc::fuzz
