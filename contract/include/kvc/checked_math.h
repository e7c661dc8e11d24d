// checked_math.h: int64 arithmetic that reports overflow instead of wrapping.
//
// Validation computes extents (offset + sum of (size - 1) * stride, pages x page stride) from
// metadata that a case file or a caller may have made hostile. Signed overflow there is undefined
// behaviour and, worse, can wrap a huge extent into a small one that passes a bounds check. Every
// such product and sum goes through these helpers; a result that does not fit is "no result".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace kvc {

using CheckedI64 = std::optional<std::int64_t>;

inline CheckedI64 checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline CheckedI64 checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Overloads that propagate an earlier overflow, so a chain reads as one expression:
// checked_add(checked_mul(a, b), c).
inline CheckedI64 checked_add(CheckedI64 a, CheckedI64 b) { return a && b ? checked_add(*a, *b) : std::nullopt; }
inline CheckedI64 checked_mul(CheckedI64 a, CheckedI64 b) { return a && b ? checked_mul(*a, *b) : std::nullopt; }

// a * b + c in one call: the most common shape (offset + index * stride).
inline CheckedI64 checked_mul_add(CheckedI64 a, CheckedI64 b, CheckedI64 c) {
  return checked_add(checked_mul(a, b), c);
}

// The product of all factors (1 for none).
inline CheckedI64 checked_product(std::initializer_list<std::int64_t> factors) {
  CheckedI64 p = std::int64_t{1};
  for (std::int64_t f : factors) p = checked_mul(p, CheckedI64{f});
  return p;
}

}  // namespace kvc
