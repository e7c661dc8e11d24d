// q_out_diff.cpp: see q_out_diff.h.
#include "testkit/compare/q_out_diff.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "kvc/oracle/q_out_codec.h"
#include "kvc/resolved_case.h"

namespace kvc::testkit {
namespace {

constexpr std::size_t kShown = 5;

}  // namespace

std::string q_out_difference_report(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                                    const std::vector<std::uint8_t>& actual) {
  std::vector<std::int64_t> mismatches;
  for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i)
    if (expected[i] != actual[i]) mismatches.push_back(static_cast<std::int64_t>(i));
  if (mismatches.empty() && expected.size() == actual.size()) return "";
  const std::optional<ResolvedInsertCase> resolved = resolve(c);
  const QOutLayout layout = resolved ? resolved->q_out : QOutLayout{};
  std::ostringstream s;
  s << "  q output: " << mismatches.size() << " mismatching bytes";
  if (expected.size() != actual.size()) s << ", sizes " << expected.size() << " vs " << actual.size();
  s << "\n";
  for (std::size_t k = 0; k < std::min(mismatches.size(), kShown); ++k) {
    const std::int64_t at = mismatches[k];
    const oracle::QOutElement e = oracle::locate_q_out_byte(layout, at).value_or(oracle::QOutElement{});
    char line[160];
    std::snprintf(line, sizeof line, "  q_out byte %lld (token %lld head %lld dim %d): expected 0x%02x actual 0x%02x\n",
                  static_cast<long long>(at), static_cast<long long>(e.token), static_cast<long long>(e.head), e.dim,
                  expected[static_cast<std::size_t>(at)], actual[static_cast<std::size_t>(at)]);
    s << line;
  }
  return s.str();
}

}  // namespace kvc::testkit
