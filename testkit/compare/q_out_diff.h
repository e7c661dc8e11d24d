// q_out_diff.h: the q output's comparator (the legacy op's Q side; backing_diff.h is the cache's).
//
// Every differing q_out byte is located by the case's Q output layout (resolved_case.h, so the
// chunk-interleaved order and the padded heads are read as the oracle writes them): token, head,
// dim. The report is bounded: the count, then the first kShown differences.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/insert_case.h"

namespace kvc::testkit {

// "" when the two q outputs are equal; else "  q output: 3 mismatching bytes\n" and a line per
// difference, "  q_out byte 1234 (token 0 head 2 dim 105): expected 0x12 actual 0x34" (-1s for a
// byte no element holds), and the sizes when they differ.
std::string q_out_difference_report(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                                    const std::vector<std::uint8_t>& actual);

}  // namespace kvc::testkit
