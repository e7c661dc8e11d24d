// cos_sin_cache.cpp: deterministic cos/sin table (see cos_sin_cache.h).
#include "kvc/oracle/cos_sin_cache.h"

#include <cmath>

namespace kvc::oracle {

std::vector<float> make_cos_sin_cache(std::int64_t max_pos, int rotary_dim, double base) {
  const int half = rotary_dim / 2;
  std::vector<float> table(static_cast<std::size_t>(max_pos) * static_cast<std::size_t>(rotary_dim));
  for (std::int64_t p = 0; p < max_pos; ++p) {
    float* row = table.data() + p * rotary_dim;
    for (int j = 0; j < half; ++j) {
      const double inv_freq = 1.0 / std::pow(base, (2.0 * j) / rotary_dim);
      const double angle = static_cast<double>(p) * inv_freq;
      row[j] = static_cast<float>(std::cos(angle));
      row[half + j] = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

}  // namespace kvc::oracle
