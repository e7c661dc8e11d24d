// breaker_table.h: a rule-breaker table assembled from its families, in the order given.
//
// The insert, store and stacked rule-breaker tables are each written as families of related
// breakers (one function per family); the table is their concatenation, and the order of the
// families is the order in which the invalid-input suites name and run their cells.
#pragma once

#include <initializer_list>
#include <utility>
#include <vector>

namespace kvc::testkit {

template <typename Breaker>
std::vector<Breaker> breaker_table(std::initializer_list<std::vector<Breaker> (*)()> families) {
  std::vector<Breaker> all;
  for (std::vector<Breaker> (*family)() : families)
    for (Breaker& b : family()) all.push_back(std::move(b));
  return all;
}

}  // namespace kvc::testkit
