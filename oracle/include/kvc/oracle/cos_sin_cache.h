// cos_sin_cache.h: a deterministic fp32 cos/sin table, [max_pos, rotary_dim] row-major.
//
// Row p holds cos(p * f_j) for j < rotary_dim/2, then sin(p * f_j), with
// f_j = 1 / base^(2j / rotary_dim). The angle and the trigonometry are evaluated in double and
// rounded once to fp32, so the table is the same on every machine with a correctly rounding libm
// (glibc). Kernels never compute this table: it is an input, so only its determinism matters.
#pragma once

#include <cstdint>
#include <vector>

namespace kvc::oracle {

inline constexpr double kDefaultRopeBase = 10000.0;

std::vector<float> make_cos_sin_cache(std::int64_t max_pos, int rotary_dim, double base = kDefaultRopeBase);

}  // namespace kvc::oracle
