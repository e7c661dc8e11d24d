// test_name.cpp: format and dashed names as GoogleTest names (see test_name.h).
#include "testkit/cases/test_name.h"

#include <cctype>

namespace kvc::testkit {

std::string capitalized(std::string_view s) {
  std::string out(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string format_test_name(RecordFormat f) { return capitalized(layout_of(f).name); }

std::string dashes_to_underscores(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch == '-') ch = '_';
  return out;
}

}  // namespace kvc::testkit
