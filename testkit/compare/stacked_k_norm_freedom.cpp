// stacked_k_norm_freedom.cpp: the K-norm's declared freedom (see stacked_k_norm_freedom.h).
#include "testkit/compare/stacked_k_norm_freedom.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "kvc/oracle/stacked_ctx_kv_fp64.h"
#include "kvc/oracle/stacked_ctx_kv_k_norm.h"
#include "kvc/oracle/storage16.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"

namespace kvc::testkit {
namespace {

using oracle::narrow16;
using oracle::widen16;

constexpr double kU32 = 0x1p-24;

float float_at_or_below(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) > x) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}
float float_at_or_above(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}
float step_ulps(float r, int steps) {
  const float toward = steps < 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int i = 0; i < std::abs(steps); ++i) r = std::nextafter(r, toward);
  return r;
}
std::int64_t float_ulps_apart(float a, float b) {
  std::int64_t n = 0;
  while (a < b && n < 1000000) {
    a = std::nextafter(a, b);
    ++n;
  }
  return n;
}

// A scaled value rounded outward: x (1 + rel) or x (1 - rel), whichever is the requested side.
double widened(double x, double rel, bool up) { return (x >= 0) == up ? x * (1.0 + rel) : x * (1.0 - rel); }

std::uint16_t load16(const std::vector<std::uint8_t>& pool, std::int64_t byte) {
  std::uint16_t v;
  std::memcpy(&v, pool.data() + byte, sizeof v);
  return v;
}

struct LayerInputs {
  std::vector<float> weight;
  const float* cos_sin = nullptr;
};

LayerInputs layer_inputs(const StackedCtxKvLayer& l) {
  LayerInputs in;
  in.weight.resize(static_cast<std::size_t>(l.head_dim));
  for (std::int64_t d = 0; d < l.head_dim; ++d)
    in.weight[static_cast<std::size_t>(d)] = widen16(l.k_norm_weight.load<std::uint16_t>(d), l.dtype());
  in.cos_sin = reinterpret_cast<const float*>(l.cos_sin.bytes.data() + l.cos_sin.meta.offset_bytes);
  return in;
}

// Approximate reciprocal, declared order: the r' within the budget that reproduces `actual`.
bool reproduced_by_some_r(const std::uint16_t* k, std::int64_t hd, const float* w, float eps, const float* cs,
                          DType storage, const StackedProfile& p, const std::uint16_t* actual, FreedKHead& freed) {
  std::vector<float> e(static_cast<std::size_t>(hd));
  for (std::int64_t d = 0; d < hd; ++d) e[static_cast<std::size_t>(d)] = widen16(k[d], storage);
  const float r = oracle::k_norm_reciprocal(oracle::k_norm_sum_of_squares(e.data(), hd, p.reduction), hd, eps);
  std::vector<std::uint16_t> candidate(static_cast<std::size_t>(hd));
  // Nearest first, so the report names the smallest move that explains the head.
  for (int distance = 1; distance <= kApproxReciprocalMaxUlps; ++distance)
    for (int steps : {-distance, distance}) {
      const float r_prime = step_ulps(r, steps);
      std::copy(k, k + hd, candidate.begin());
      oracle::k_norm_rope_head_with_r(candidate.data(), hd, w, r_prime, cs, storage, p.rope);
      if (std::equal(candidate.begin(), candidate.end(), actual)) {
        freed.r_steps = steps;
        freed.r_used = r_prime;
        return true;
      }
    }
  return false;
}

}  // namespace

KHeadBudget unspecified_reduction_budget(const std::uint16_t* k, std::int64_t hd, const float* w, float eps,
                                         const float* cs, DType storage, const StackedProfile& p) {
  KHeadBudget b;
  std::vector<float> e(static_cast<std::size_t>(hd));
  double exact = 0.0;  // every square is exact in fp64; fp64's own summation error is added below
  for (std::int64_t d = 0; d < hd; ++d) {
    e[static_cast<std::size_t>(d)] = widen16(k[d], storage);
    exact += static_cast<double>(e[static_cast<std::size_t>(d)]) * e[static_cast<std::size_t>(d)];
  }
  // S in any order, fma or separate products: within gamma_hd * S (all terms >= 0).
  const double g = oracle::gemm_gamma(hd) + oracle::gemm_gamma(hd, oracle::kFp64UnitRoundoff);
  const double s_lo = exact * (1.0 - g), s_hi = exact * (1.0 + g);
  // The mean: S * fl(1/hd) or S / hd, at most two roundings; + eps (or the fma): one more.
  const double m_lo = s_lo / static_cast<double>(hd) * (1.0 - kU32) * (1.0 - kU32);
  const double m_hi = s_hi / static_cast<double>(hd) * (1.0 + kU32) * (1.0 + kU32);
  const double ms_lo = widened(m_lo + eps, kU32, false), ms_hi = widened(m_hi + eps, kU32, true);
  // 1/sqrt in fp64 is within 2^-52 relative; 2^-50 covers it and the two steps above.
  b.r_lo = float_at_or_below(widened(1.0 / std::sqrt(ms_hi), 0x1p-50, false));
  b.r_hi = float_at_or_above(widened(1.0 / std::sqrt(ms_lo), 0x1p-50, true));
  if (p.reciprocal == KNormReciprocal::kApproximate) {
    b.r_lo = step_ulps(b.r_lo, -kApproxReciprocalMaxUlps);
    b.r_hi = step_ulps(b.r_hi, kApproxReciprocalMaxUlps);
  }
  // The stored normed value is monotone in r: its range is spanned by the interval's ends.
  std::vector<float> n_lo(e.size()), n_hi(e.size());
  for (std::size_t d = 0; d < e.size(); ++d) {
    const float a = oracle::k_norm_normed(e[d], b.r_lo, w[d], storage);
    const float z = oracle::k_norm_normed(e[d], b.r_hi, w[d], storage);
    n_lo[d] = std::min(a, z);
    n_hi[d] = std::max(a, z);
  }
  // Each rotated output is monotone in each input: its range is spanned by the box's corners.
  b.lo.resize(e.size());
  b.hi.resize(e.size());
  const std::int64_t half = hd / 2;
  for (std::int64_t d = 0; d < half; ++d) {
    const std::size_t i = static_cast<std::size_t>(d), j = static_cast<std::size_t>(d + half);
    float first_lo = std::numeric_limits<float>::infinity(), first_hi = -first_lo;
    float second_lo = first_lo, second_hi = first_hi;
    for (float a : {n_lo[i], n_hi[i]})
      for (float z : {n_lo[j], n_hi[j]}) {
        const oracle::RotatedPair q = oracle::stacked_rotate_pair(a, z, cs[d], cs[half + d], p.rope);
        const float f = widen16(narrow16(q.first, storage), storage);
        const float s = widen16(narrow16(q.second, storage), storage);
        first_lo = std::min(first_lo, f);
        first_hi = std::max(first_hi, f);
        second_lo = std::min(second_lo, s);
        second_hi = std::max(second_hi, s);
      }
    b.lo[i] = narrow16(first_lo, storage);
    b.hi[i] = narrow16(first_hi, storage);
    b.lo[j] = narrow16(second_lo, storage);
    b.hi[j] = narrow16(second_hi, storage);
  }
  return b;
}

StackedCtxKvOutputs excuse_k_norm_freedom(const StackedCtxKvCase& c, const std::vector<std::uint16_t>& projection,
                                          const StackedProfile& profile, const StackedCtxKvOutputs& expected,
                                          const StackedCtxKvOutputs& actual, KNormFreedomReport* report) {
  KNormFreedomReport r;
  r.profile = profile;
  StackedCtxKvOutputs out = actual;
  const DType storage = c.storage_dtype();
  const bool shapes_match = expected.k_pools.size() == c.layers.size() && actual.k_pools.size() == c.layers.size();
  if (!profile.k_norm_exact() && shapes_match) {
    // The last token to write a slot decides its bytes (the oracle applies tokens in order).
    std::unordered_map<std::int64_t, std::int64_t> last_writer;
    for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
      if (!c.committed(t)) continue;
      const std::int64_t loc = c.cache_loc.load<std::int64_t>(t);
      if (writes_slot(loc, profile.cache_loc)) last_writer[loc] = t;
    }
    const std::int64_t width = c.projection_width();
    for (int li = 0; li < c.num_layers(); ++li) {
      const StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(li)];
      const auto& exp_pool = expected.k_pools[static_cast<std::size_t>(li)];
      const auto& act_pool = actual.k_pools[static_cast<std::size_t>(li)];
      if (exp_pool.size() != act_pool.size()) continue;
      const LayerInputs in = layer_inputs(l);
      const std::int64_t hd = l.head_dim;
      std::vector<std::uint16_t> exp_head(static_cast<std::size_t>(hd)), act_head(exp_head.size());
      for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
        if (!c.committed(t)) continue;
        const std::int64_t slot = c.cache_loc.load<std::int64_t>(t);
        if (!writes_slot(slot, profile.cache_loc) || last_writer[slot] != t) continue;
        const float* cs = in.cos_sin + c.positions.load<std::int64_t>(t) * hd;
        for (std::int64_t h = 0; h < l.num_kv_heads; ++h) {
          const std::int64_t base = l.k_pool.offset_bytes + (slot * l.k_pool.stride(0) + h * l.k_pool.stride(1)) * 2;
          if (base + hd * 2 > static_cast<std::int64_t>(act_pool.size())) continue;
          for (std::int64_t d = 0; d < hd; ++d) {
            exp_head[static_cast<std::size_t>(d)] = load16(exp_pool, base + 2 * d);
            act_head[static_cast<std::size_t>(d)] = load16(act_pool, base + 2 * d);
          }
          const std::uint16_t* k = projection.data() + t * width + c.projection_column(li) + h * hd;
          FreedKHead f;
          f.layer = li;
          f.token = t;
          f.slot = slot;
          f.head = h;
          bool accepted = false;
          if (profile.reduction == KNormReduction::kUnspecified) {
            const KHeadBudget b = unspecified_reduction_budget(k, hd, in.weight.data(), l.eps, cs, storage, profile);
            r.widest_r_ulps = std::max(r.widest_r_ulps, float_ulps_apart(b.r_lo, b.r_hi));
            accepted = true;
            for (std::int64_t d = 0; d < hd; ++d) {
              const std::size_t i = static_cast<std::size_t>(d);
              const std::int64_t budget = std::max(ulp_distance16(b.lo[i], exp_head[i], storage),
                                                   ulp_distance16(b.hi[i], exp_head[i], storage));
              ++r.elements_checked;
              r.widest_budget_ulps = std::max(r.widest_budget_ulps, budget);
              f.budget_ulps = std::max(f.budget_ulps, budget);
              const float a = widen16(act_head[i], storage);
              const float lo = widen16(b.lo[i], storage), hi = widen16(b.hi[i], storage);
              const bool inside = std::isfinite(a) ? (a >= lo && a <= hi) : act_head[i] == exp_head[i];
              if (!inside) accepted = false;
            }
          }
          if (exp_head == act_head) continue;
          ++r.heads_differing;
          for (std::size_t i = 0; i < exp_head.size(); ++i)
            if (exp_head[i] != act_head[i]) {
              ++f.differing;
              f.max_ulps = std::max(f.max_ulps, ulp_distance16(exp_head[i], act_head[i], storage));
            }
          if (profile.reduction != KNormReduction::kUnspecified)
            accepted = reproduced_by_some_r(k, hd, in.weight.data(), l.eps, cs, storage, profile, act_head.data(), f);
          if (!accepted) {
            ++r.heads_outside;
            continue;
          }
          r.freed.push_back(f);
          auto& pool = out.k_pools[static_cast<std::size_t>(li)];
          std::copy(exp_pool.begin() + base, exp_pool.begin() + base + hd * 2, pool.begin() + base);
        }
      }
    }
  }
  if (report != nullptr) *report = std::move(r);
  return out;
}

std::string format_k_norm_freedom(const StackedCtxKvCase& c, const KNormFreedomReport& r,
                                  const std::string& actual_name) {
  const StackedProfile& p = r.profile;
  if (p.k_norm_exact()) return {};
  const DType d = c.storage_dtype();
  const char* dtype = d == DType::kF16 ? "fp16" : "bf16";
  std::ostringstream os;
  char line[512];
  if (p.reduction == KNormReduction::kUnspecified) {
    std::int64_t hd = 0;
    for (const StackedCtxKvLayer& l : c.layers) hd = std::max(hd, l.head_dim);
    std::snprintf(
        line, sizeof line,
        "%s K under K-norm reduction `unspecified`%s (docs/contract.md 6.2.1): S within gamma_hd S of the "
        "exact sum (gamma_%lld = %.4g), mean and eps within 3 roundings, so r lies in an interval of up to "
        "%lld fp32 ulps; per element, the normed K at the interval's ends and the rotated K at each pair's "
        "corners bound the stored value: widest budget %lld ulp of %s over %lld elements\n",
        actual_name.c_str(),
        p.reciprocal == KNormReciprocal::kApproximate ? " with the approximate reciprocal (+-4 fp32 ulps)" : "",
        static_cast<long long>(hd), oracle::gemm_gamma(hd), static_cast<long long>(r.widest_r_ulps),
        static_cast<long long>(r.widest_budget_ulps), dtype, static_cast<long long>(r.elements_checked));
  } else {
    std::snprintf(line, sizeof line,
                  "%s K under K-norm reciprocal `approx` (docs/contract.md 6.2.1): a head passes if some r' within %d "
                  "fp32 ulps of the correctly rounded r reproduces it exactly\n",
                  actual_name.c_str(), kApproxReciprocalMaxUlps);
  }
  os << line;
  os << "  " << r.heads_differing << " K head(s) differ from the oracle's exact order, " << r.freed.size()
     << " within the budget, " << r.heads_outside << " outside it\n";
  constexpr std::size_t kShown = 16;
  for (std::size_t i = 0; i < r.freed.size() && i < kShown; ++i) {
    const FreedKHead& f = r.freed[i];
    if (p.reduction == KNormReduction::kUnspecified)
      std::snprintf(line, sizeof line,
                    "  needed it: layer %d token %lld (slot %lld) head %lld: %lld element(s), up to %lld ulp (the "
                    "head's widest budget %lld ulp)\n",
                    f.layer, static_cast<long long>(f.token), static_cast<long long>(f.slot),
                    static_cast<long long>(f.head), static_cast<long long>(f.differing),
                    static_cast<long long>(f.max_ulps), static_cast<long long>(f.budget_ulps));
    else
      std::snprintf(line, sizeof line,
                    "  needed it: layer %d token %lld (slot %lld) head %lld: %lld element(s), up to %lld ulp, "
                    "reproduced with r' = r %+d ulp (%.9g)\n",
                    f.layer, static_cast<long long>(f.token), static_cast<long long>(f.slot),
                    static_cast<long long>(f.head), static_cast<long long>(f.differing),
                    static_cast<long long>(f.max_ulps), f.r_steps, static_cast<double>(f.r_used));
    os << line;
  }
  if (r.freed.size() > kShown) os << "  ... and " << r.freed.size() - kShown << " more\n";
  return os.str();
}

}  // namespace kvc::testkit
