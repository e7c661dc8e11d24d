// stacked_ctx_kv_fp64.cpp: the fp64 projection and its error bound (see stacked_ctx_kv_fp64.h).
#include "kvc/oracle/stacked_ctx_kv_fp64.h"

#include <Eigen/Dense>

#include <cmath>
#include <limits>

#include "kvc/oracle/storage16.h"

namespace kvc::oracle {
namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// `rows` x `cols` 16-bit values of `dtype` starting at element `first`, widened to fp64 (exactly).
RowMatrix widened(const HostTensor& t, std::int64_t first, std::int64_t rows, std::int64_t cols, DType dtype) {
  RowMatrix m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      m(r, c) = static_cast<double>(widen16(t.load<std::uint16_t>(first + r * cols + c), dtype));
  return m;
}

}  // namespace

ProjectionFp64 stacked_ctx_kv_projection_fp64(const StackedCtxKvCase& c) {
  ProjectionFp64 p;
  p.tokens = c.num_tokens();
  p.width = c.projection_width();
  p.value.assign(static_cast<std::size_t>(p.tokens * p.width), 0.0);
  p.magnitude.assign(p.value.size(), 0.0);
  const std::int64_t hidden = c.hidden();
  const RowMatrix x = widened(c.x, 0, p.tokens, hidden, c.storage_dtype());
  const RowMatrix x_abs = x.cwiseAbs();
  Eigen::Map<RowMatrix> value(p.value.data(), p.tokens, p.width);
  Eigen::Map<RowMatrix> magnitude(p.magnitude.data(), p.tokens, p.width);
  for (int i = 0; i < c.num_layers(); ++i) {
    const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(i)];
    const std::int64_t rows = l.kv_rows();
    const RowMatrix w = widened(l.qkv_weight, l.q_size * hidden, rows, hidden, l.dtype());
    const std::int64_t column = c.projection_column(i);
    auto v = value.middleCols(column, rows);
    auto m = magnitude.middleCols(column, rows);
    v.noalias() = x * w.transpose();
    m.noalias() = x_abs * w.cwiseAbs().transpose();
    if (l.has_bias()) {
      const RowMatrix b = widened(l.qkv_bias, l.q_size, 1, rows, l.dtype());
      v.rowwise() += b.row(0);
      m.rowwise() += b.row(0).cwiseAbs();
    }
  }
  return p;
}

double gemm_gamma(std::int64_t n, double unit_roundoff) {
  const double nu = static_cast<double>(n) * unit_roundoff;
  return nu >= 1.0 ? std::numeric_limits<double>::infinity() : nu / (1.0 - nu);
}

std::int64_t projection_terms(const StackedCtxKvCase& c, int layer) {
  return c.hidden() + (c.layers[static_cast<std::size_t>(layer)].has_bias() ? 1 : 0);
}

int storage_precision_bits(DType storage) { return storage == DType::kF16 ? 11 : 8; }

double storage_ulp(double magnitude, DType storage) {
  const int p = storage_precision_bits(storage);
  const int min_exponent = storage == DType::kF16 ? -14 : -126;  // of the normal range
  const double m = std::fabs(magnitude);
  const int e = m > 0.0 ? std::max(std::ilogb(m), min_exponent) : min_exponent;
  return std::ldexp(1.0, e - (p - 1));
}

double projection_ulp_budget(std::int64_t terms, DType storage) {
  return 1.0 + std::ldexp(gemm_gamma(terms), storage_precision_bits(storage) + 1);
}

bool within_gemm_bound(double computed, double value, double magnitude, std::int64_t terms) {
  const double bound = (gemm_gamma(terms) + gemm_gamma(terms, kFp64UnitRoundoff)) * magnitude;
  // The bound itself is evaluated in fp64: one more relative 2^-50 covers its roundings.
  return std::fabs(computed - value) <= bound * (1.0 + 0x1p-50);
}

double projection_allowance(double magnitude, std::int64_t terms, DType storage) {
  return projection_ulp_budget(terms, storage) * storage_ulp(magnitude * (1.0 + gemm_gamma(terms)), storage);
}

}  // namespace kvc::oracle
