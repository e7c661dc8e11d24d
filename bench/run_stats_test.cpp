// run_stats_test.cpp: the summary the benchmarks quote.
//
// Defects caught: a median taken from unsorted runs (the launch order), the upper middle value
// for an even count, min/max swapped or taken from the first and last runs.
#include "run_stats.h"

#include <gtest/gtest.h>

namespace kvc::bench {
namespace {

TEST(RunStats, MedianOfUnsortedOddCount) {
  const RunStats s = summarize({5.0, 1.0, 4.0, 2.0, 3.0});
  EXPECT_EQ(s.runs, 5);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
}

TEST(RunStats, MedianOfEvenCountIsMeanOfMiddlePair) {
  const RunStats s = summarize({8.0, 2.0, 4.0, 6.0});
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 8.0);
}

TEST(RunStats, EmptyIsZeros) {
  const RunStats s = summarize({});
  EXPECT_EQ(s.runs, 0);
  EXPECT_DOUBLE_EQ(s.median, 0.0);
}

}  // namespace
}  // namespace kvc::bench
