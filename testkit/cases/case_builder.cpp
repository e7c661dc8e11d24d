// case_builder.cpp: geometry and case construction (see case_builder.h).
#include "testkit/cases/case_builder.h"

#include <cmath>
#include <numeric>

#include "kvc/oracle/bf16.h"
#include "kvc/resolved_case.h"

namespace kvc::testkit {

CacheGeometry make_geometry(const CacheShape& s) {
  const RecordLayout& l = layout_of(s.format);
  CacheGeometry g;
  g.dtype = l.cache_dtype;
  g.num_blocks = s.num_blocks;
  g.block_size = s.block_size;
  g.width = l.record_width;
  const std::int64_t es = dtype_size(l.cache_dtype);
  if (l.paged_regions) {
    g.stride1 = l.record_width;  // unused by packed addressing; what torch reports for the view
    g.stride0 = (l.dense_page_bytes(s.block_size) + s.page_padding_bytes) / es;
  } else {
    g.stride1 = (l.data_bytes + s.row_gap_bytes) / es;
    g.stride0 = (s.block_size * g.stride1 * es + s.page_padding_bytes) / es;
  }
  g.stride2 = 1;
  g.offset_bytes = s.base_offset_bytes;
  return g;
}

std::int64_t upstream_page_padding_bytes(RecordFormat f, std::int64_t block_size) {
  const RecordLayout& l = layout_of(f);
  constexpr std::int64_t kUpstreamAlign = 576;
  const std::int64_t stride =
      (block_size * l.record_width + kUpstreamAlign - 1) / kUpstreamAlign * kUpstreamAlign + kUpstreamAlign;
  return (stride - block_size * l.record_width) * dtype_size(l.cache_dtype);
}

InsertCase make_kv_only_case(const CacheShape& shape, const KvInputs& in) {
  const std::int64_t n = static_cast<std::int64_t>(in.kv.size()) / kHeadDim;
  InsertCase c;
  c.op = InsertOp::kKvOnly;
  c.kv = make_tensor_from(in.kv_dtype, in.kv, {n, kHeadDim});
  c.slots = make_tensor_from(DType::kI64, in.slots, {static_cast<std::int64_t>(in.slots.size())});
  c.positions = make_tensor_from(DType::kI64, in.positions, {static_cast<std::int64_t>(in.positions.size())});
  c.cos_sin =
      make_tensor_from(DType::kF32, in.cos_sin, {static_cast<std::int64_t>(in.cos_sin.size()) / kRopeDim, kRopeDim});
  c.cache = make_geometry(shape);
  c.block_size = shape.block_size;
  c.kv_mxfp8 = layout_of(shape.format).kv_mxfp8;
  if (shape.format == RecordFormat::kFp8_512)
    c.fp8_scale = make_tensor_from(DType::kF32, std::vector<float>{in.fp8_scale}, {1});
  return c;
}

InsertCase make_legacy_case(const InsertCase& kv_only, const QuerySpec& query) {
  InsertCase c = kv_only;
  c.op = InsertOp::kLegacy;
  const std::int64_t n = c.num_rows();
  const DType dt = c.kv.meta.dtype;
  c.q = make_tensor(dt, {n, query.heads, kHeadDim});
  if (!query.q.empty()) c.q = make_tensor_from(dt, query.q, {n, query.heads, kHeadDim});
  c.eps = query.eps;
  c.apply_q_norm = query.apply_q_norm;
  c.apply_q_rope = query.apply_q_rope;
  c.q_interleaved = query.q_interleaved;
  const RecordFormat f = resolve_or_throw(c).format;
  auto meta = [](DType t, std::vector<std::int64_t> sizes) {
    TensorMeta m;
    m.dtype = t;
    m.strides = contiguous_strides(sizes);
    m.sizes = std::move(sizes);
    return m;
  };
  if (is_packed(f)) {
    c.q_out = query.padded_heads == 0 ? meta(dt, {0}) : meta(dt, {n, query.padded_heads, kHeadDim});
  } else if (f == RecordFormat::kFp8_512) {
    c.q_out = meta(DType::kE4M3, {n, query.heads, kHeadDim});
    c.q_scale_inv = make_tensor_from(DType::kF32, std::vector<float>{query.q_scale_inv}, {1});
  } else {
    c.q_out = meta(DType::kBF16, {n, query.heads, kHeadDim});
  }
  return c;
}

std::int64_t Rng::uniform(std::int64_t lo, std::int64_t hi) {
  const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
  return lo + static_cast<std::int64_t>(span == 0 ? bits() : bits() % span);
}

float Rng::normal() {
  const double u1 = 1.0 - uniform01();  // (0, 1]
  const double u2 = uniform01();
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

std::uint16_t Rng::bf16_normal() { return oracle::float_to_bf16(normal()); }

std::vector<std::int64_t> Rng::distinct(std::int64_t capacity, std::int64_t count) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(capacity));
  std::iota(all.begin(), all.end(), 0);
  for (std::int64_t i = 0; i < count; ++i) {  // partial Fisher-Yates
    const std::int64_t j = uniform(i, capacity - 1);
    std::swap(all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(j)]);
  }
  all.resize(static_cast<std::size_t>(count));
  return all;
}

std::vector<std::uint16_t> random_bf16_rows(Rng& rng, std::int64_t rows) {
  std::vector<std::uint16_t> v(static_cast<std::size_t>(rows * kHeadDim));
  for (auto& x : v) x = rng.bf16_normal();
  return v;
}

std::vector<float> random_cos_sin(Rng& rng, std::int64_t max_pos) {
  std::vector<float> t(static_cast<std::size_t>(max_pos * kRopeDim));
  for (std::int64_t p = 0; p < max_pos; ++p) {
    for (int j = 0; j < kRopePairs; ++j) {
      const float angle = rng.normal();
      t[static_cast<std::size_t>(p * kRopeDim + j)] = std::cos(angle);
      t[static_cast<std::size_t>(p * kRopeDim + kRopePairs + j)] = std::sin(angle);
    }
  }
  return t;
}

}  // namespace kvc::testkit
