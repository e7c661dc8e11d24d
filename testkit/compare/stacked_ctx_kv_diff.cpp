// stacked_ctx_kv_diff.cpp: the stacked context-KV comparators (see stacked_ctx_kv_diff.h).
#include "testkit/compare/stacked_ctx_kv_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "kvc/oracle/storage16.h"

namespace kvc::testkit {
namespace {

bool is_nan16(std::uint16_t b, DType d) { return d == DType::kF16 ? (b & 0x7FFFu) > 0x7C00u : (b & 0x7FFFu) > 0x7F80u; }

// Position on the number line in representable steps: sign-magnitude to a monotone integer.
std::int64_t ordinal16(std::uint16_t b) {
  const std::int64_t magnitude = b & 0x7FFF;
  return (b & 0x8000u) ? -magnitude : magnitude;
}

std::uint16_t load16(const std::vector<std::uint8_t>& bytes, std::int64_t offset) {
  std::uint16_t v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

std::string layer_text(int layer, bool v) { return "layer " + std::to_string(layer) + (v ? " V" : " K"); }

// Which token writes each slot (the last one, as the oracle applies rows in order).
std::unordered_map<std::int64_t, std::int64_t> token_of_slot(const StackedCtxKvCase& c) {
  std::unordered_map<std::int64_t, std::int64_t> m;
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
    const std::int64_t slot = c.committed(t) ? c.cache_loc.load<std::int64_t>(t) : -1;
    if (slot >= 0) m[slot] = t;
  }
  return m;
}

void diff_pool(const StackedCtxKvCase& c, int layer, bool v, const std::vector<std::uint8_t>& expected,
               const std::vector<std::uint8_t>& actual, const std::unordered_map<std::int64_t, std::int64_t>& tokens,
               StackedDiffReport& r) {
  const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(layer)];
  const TensorMeta& m = v ? l.v_pool : l.k_pool;
  const DType d = c.storage_dtype();
  if (expected.size() != actual.size()) {
    r.size_mismatch = true;
    return;
  }
  const std::int64_t stride = m.stride(0);
  for (std::int64_t offset = 0; offset + 1 < static_cast<std::int64_t>(expected.size()); offset += 2) {
    ++r.compared_elements;
    const std::uint16_t e = load16(expected, offset);
    const std::uint16_t a = load16(actual, offset);
    if (e == a) continue;
    PoolMismatch x;
    x.layer = layer;
    x.v_pool = v;
    x.expected = e;
    x.actual = a;
    x.ulp_distance = ulp_distance16(e, a, d);
    std::string cls = layer_text(layer, v);
    const std::int64_t element = (offset - m.offset_bytes) / 2;
    if (offset >= m.offset_bytes && stride > 0) {
      x.slot = element / stride;
      const std::int64_t within = element % stride;
      if (within < l.kv_size()) {
        x.head = within / l.head_dim;
        x.dim = within % l.head_dim;
      } else {
        cls += " gap";
      }
      if (auto it = tokens.find(x.slot); it != tokens.end())
        x.token = it->second;
      else
        cls += " unwritten slot";
    } else {
      cls += " before the view";
    }
    ++r.mismatch_count;
    ++r.count_by_class[cls];
    if (x.ulp_distance > r.max_ulp_distance) r.max_ulp_distance = x.ulp_distance;
    if (r.first.size() < StackedDiffReport::kShown) r.first.push_back(x);
  }
}

}  // namespace

std::int64_t ulp_distance16(std::uint16_t a, std::uint16_t b, DType dtype) {
  const bool na = is_nan16(a, dtype), nb = is_nan16(b, dtype);
  if (na || nb) return na && nb ? 0 : -1;
  const std::int64_t d = ordinal16(a) - ordinal16(b);
  return d < 0 ? -d : d;
}

std::string describe16(std::uint16_t bits, DType dtype) {
  char s[64];
  std::snprintf(s, sizeof s, "0x%04x (%.6g)", bits, static_cast<double>(oracle::widen16(bits, dtype)));
  return s;
}

StackedDiffReport diff_stacked_pools(const StackedCtxKvCase& c, const StackedCtxKvOutputs& expected,
                                     const StackedCtxKvOutputs& actual) {
  StackedDiffReport r;
  const std::size_t layers = c.layers.size();
  if (expected.k_pools.size() != layers || actual.k_pools.size() != layers || expected.v_pools.size() != layers ||
      actual.v_pools.size() != layers) {
    r.size_mismatch = true;
    return r;
  }
  const auto tokens = token_of_slot(c);
  for (int l = 0; l < static_cast<int>(layers); ++l) {
    diff_pool(c, l, false, expected.k_pools[static_cast<std::size_t>(l)], actual.k_pools[static_cast<std::size_t>(l)],
              tokens, r);
    diff_pool(c, l, true, expected.v_pools[static_cast<std::size_t>(l)], actual.v_pools[static_cast<std::size_t>(l)],
              tokens, r);
  }
  return r;
}

std::string describe_mismatch(const PoolMismatch& m, DType dtype) {
  std::ostringstream os;
  os << layer_text(m.layer, m.v_pool);
  if (m.slot < 0) {
    os << " before the view";
  } else {
    if (m.token >= 0)
      os << " token " << m.token << " (slot " << m.slot << ")";
    else
      os << " slot " << m.slot << " (no token writes it)";
    if (m.head >= 0)
      os << " head " << m.head << " dim " << m.dim;
    else
      os << " gap between slots";
  }
  os << ": expected " << describe16(m.expected, dtype) << " actual " << describe16(m.actual, dtype) << ", ";
  if (m.ulp_distance < 0)
    os << "NaN against a number";
  else
    os << m.ulp_distance << " ulp";
  return os.str();
}

std::string format_stacked_report(const StackedCtxKvCase& c, const StackedDiffReport& report,
                                  const std::string& expected_name, const std::string& actual_name,
                                  const std::string& reproduce) {
  std::ostringstream os;
  if (report.size_mismatch) {
    os << expected_name << " and " << actual_name << " pools differ in count or size\n";
  } else if (report.equal()) {
    os << expected_name << " and " << actual_name << " pools are identical (" << report.compared_elements
       << " elements)\n";
  } else {
    os << report.mismatch_count << " of " << report.compared_elements << " pool elements differ between "
       << expected_name << " and " << actual_name << " (max " << report.max_ulp_distance << " ulp):\n";
    for (const auto& [cls, n] : report.count_by_class) os << "  " << cls << ": " << n << "\n";
    for (const PoolMismatch& m : report.first) os << "  " << describe_mismatch(m, c.storage_dtype()) << "\n";
  }
  if (!reproduce.empty()) os << "reproduce: " << reproduce << "\n";
  return os.str();
}

StackedCtxKvOutputs pools_at_written_slots(const StackedCtxKvCase& c, const StackedCtxKvOutputs& pools,
                                           std::uint8_t canary) {
  StackedCtxKvOutputs out;
  for (std::size_t l = 0; l < c.layers.size(); ++l) {
    const StackedCtxKvLayer& layer = c.layers[l];
    for (const bool v : {false, true}) {
      const std::vector<std::uint8_t>& from = v ? pools.v_pools[l] : pools.k_pools[l];
      std::vector<std::uint8_t> to(from.size(), canary);
      const TensorMeta& m = v ? layer.v_pool : layer.k_pool;
      for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
        const std::int64_t slot = c.committed(t) ? c.cache_loc.load<std::int64_t>(t) : -1;
        if (slot < 0) continue;
        const std::int64_t begin = m.offset_bytes + slot * m.stride(0) * 2;
        const std::int64_t end =
            std::min<std::int64_t>(begin + layer.kv_size() * 2, static_cast<std::int64_t>(from.size()));
        for (std::int64_t b = begin; b < end; ++b) to[static_cast<std::size_t>(b)] = from[static_cast<std::size_t>(b)];
      }
      (v ? out.v_pools : out.k_pools).push_back(std::move(to));
    }
  }
  return out;
}

ProjectionBudgetReport compare_projection_under_budget(const StackedCtxKvCase& c,
                                                       const std::vector<std::uint16_t>& expected,
                                                       const std::vector<std::uint16_t>& actual,
                                                       const oracle::ProjectionFp64& reference) {
  ProjectionBudgetReport r;
  const DType d = c.storage_dtype();
  const std::int64_t width = c.projection_width();
  for (int l = 0; l < c.num_layers(); ++l) {
    const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
    const std::int64_t terms = oracle::projection_terms(c, l);
    r.terms = std::max(r.terms, terms);
    r.budget = std::max(r.budget, oracle::projection_ulp_budget(terms, d));
    const std::int64_t column = c.projection_column(l);
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      for (std::int64_t col = 0; col < layer.kv_rows(); ++col) {
        const std::size_t i = static_cast<std::size_t>(t * width + column + col);
        ++r.compared;
        const std::uint16_t e = expected[i], a = actual[i];
        const std::int64_t ulps = ulp_distance16(e, a, d);
        ++r.ulp_histogram[ulps < 0 ? -1 : std::min<std::int64_t>(ulps, 3)];
        r.max_ulp_distance = std::max(r.max_ulp_distance, ulps);
        const double magnitude = reference.magnitude[i];
        const double allowance = oracle::projection_allowance(magnitude, terms, d);
        const double ev = oracle::widen16(e, d), av = oracle::widen16(a, d);
        // Non-finite values must agree exactly: no bound speaks for them.
        const bool finite = std::isfinite(ev) && std::isfinite(av);
        const double diff = finite ? std::fabs(ev - av) : (e == a ? 0.0 : INFINITY);
        const double unit = oracle::storage_ulp(magnitude * (1.0 + oracle::gemm_gamma(terms)), d);
        r.max_used = std::max(r.max_used, diff / unit);
        if (diff <= allowance) continue;
        ++r.beyond_budget;
        if (r.first.size() < ProjectionBudgetReport::kShown) {
          ProjectionMismatch m;
          m.layer = l;
          m.v_rows = col >= layer.kv_size();
          m.token = t;
          const std::int64_t within = col % layer.kv_size();
          m.head = within / layer.head_dim;
          m.dim = within % layer.head_dim;
          m.expected = e;
          m.actual = a;
          m.ulp_distance = ulps;
          m.allowance = allowance;
          m.magnitude = magnitude;
          r.first.push_back(m);
        }
      }
    }
  }
  return r;
}

std::string format_budget_report(const StackedCtxKvCase& c, const ProjectionBudgetReport& report,
                                 const std::string& actual_name) {
  const DType d = c.storage_dtype();
  std::ostringstream os;
  const std::int64_t terms = report.terms;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s projection vs the oracle's under the ulp budget of docs/contract.md 4.5: D = 1 + 2^(p+1) "
                "gamma_n = %.6g ulps of %s at the magnitude S' = (sum |x w| + |b|)(1 + gamma_n), p = %d, n = %lld, "
                "gamma_n = %.4g (relative to S at most %.3g%%, upstream rtol %s)\n",
                actual_name.c_str(), report.budget, d == DType::kF16 ? "fp16" : "bf16",
                oracle::storage_precision_bits(d), static_cast<long long>(terms), oracle::gemm_gamma(terms),
                100.0 * report.budget * std::ldexp(1.0, 1 - oracle::storage_precision_bits(d)),
                d == DType::kF16 ? "5e-3" : "2e-2");
  os << line;
  os << "  " << report.compared << " elements, " << report.beyond_budget << " beyond the budget; used up to "
     << report.max_used << " of " << report.budget << "; plain ulp distances:";
  for (const auto& [ulps, n] : report.ulp_histogram)
    os << " "
       << (ulps < 0    ? std::string("NaN-vs-number")
           : ulps >= 3 ? std::string(">=3")
                       : std::to_string(ulps))
       << ":" << n;
  os << "\n";
  for (const ProjectionMismatch& m : report.first) {
    std::snprintf(line, sizeof line,
                  "  layer %d %s token %lld head %lld dim %lld: expected %s actual %s, %lld ulp, allowed %.4g "
                  "(S = %.6g)\n",
                  m.layer, m.v_rows ? "V" : "K", static_cast<long long>(m.token), static_cast<long long>(m.head),
                  static_cast<long long>(m.dim), describe16(m.expected, d).c_str(), describe16(m.actual, d).c_str(),
                  static_cast<long long>(m.ulp_distance), m.allowance, m.magnitude);
    os << line;
  }
  return os.str();
}

}  // namespace kvc::testkit
