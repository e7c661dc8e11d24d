// junit_xml.cpp: JUnit XML (see junit_xml.h).
#include "junit_xml.h"

#include <cstdio>
#include <sstream>

namespace kvc::runner {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when it is not one: overlong
// forms, surrogates and code points past U+10FFFF are invalid, as are U+FFFE and U+FFFF (not XML
// characters).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0u) != 0x80u) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3Fu);
  }
  const std::uint32_t min = n == 2 ? 0x80u : n == 3 ? 0x800u : 0x10000u;
  if (cp < min || cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu) || cp == 0xFFFEu || cp == 0xFFFFu) return 0;
  return n;
}

std::string hex_escape(unsigned char b) {
  char s[8];
  std::snprintf(s, sizeof s, "\\x%02X", b);
  return s;
}

std::string seconds(double s) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3f", s);
  return t;
}

std::string first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

void property(std::ostringstream& s, const std::string& name, const std::string& value) {
  s << "    <property name=\"" << xml_escape(name, true) << "\" value=\"" << xml_escape(value, true) << "\"/>\n";
}

// The run's facts, said once for the whole file.
void properties(std::ostringstream& s, const RunReport& report) {
  s << "  <properties>\n";
  property(s, "library", report.library.empty() ? "(none loaded)" : report.library);
  property(s, "device", report.device);
  property(s, "profile", report.profile);
  property(s, "stacked_profile", report.stacked_profile);
  property(s, "verdict", std::string(run_verdict_name(report.verdict())));
  property(s, "exit_code", std::to_string(report.exit_code()));
  property(s, "kernel_bytes_compared", std::to_string(report.kernel_bytes_compared()));
  if (!report.declarations.empty()) {
    for (const OpCoverage& c : report.coverage()) {
      const std::string p = "coverage." + std::string(abi_op_name(c.op)) + ".";
      std::string supported;
      for (const std::string& x : c.declaration.supported) supported += (supported.empty() ? "" : " ") + x;
      property(s, p + "status", std::string(op_status_name(c.status)));
      property(s, p + "exported", c.declaration.exported == Export::kExported ? "yes" : "no");
      property(s, p + "declared_supported", supported.empty() ? "nothing" : supported);
      property(s, p + "checks", std::to_string(c.checks));
      property(s, p + "passed", std::to_string(c.passed));
      property(s, p + "failed", std::to_string(c.failed));
      property(s, p + "skipped", std::to_string(c.skipped));
      property(s, p + "bytes_compared", std::to_string(c.bytes_compared));
    }
  }
  if (const ApproxRsqrtTally t = report.approx_rsqrt(); !t.empty()) property(s, "approx_rsqrt", t.line());
  for (std::size_t i = 0; i < report.incidents.size(); ++i)
    property(s, "incident." + std::to_string(i + 1), report.incidents[i]);
  s << "  </properties>\n";
}

}  // namespace

std::string xml_escape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b >= 0x80) {
      const std::size_t n = utf8_sequence(text, i);
      if (n == 0) {
        out += hex_escape(b);
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (b) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\r':
        out += "&#13;";  // a literal CR would be normalised away by the parser
        break;
      default:
        if (b < 0x20 || b == 0x7F)
          out += hex_escape(b);
        else
          out += static_cast<char>(b);
    }
    ++i;
  }
  return out;
}

std::string junit_xml(const RunReport& report) {
  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s << "<testsuites name=\"kvconform\" tests=\"" << report.checks.size() << "\" failures=\""
    << report.count(Verdict::kFailed) << "\" errors=\"0\" skipped=\"" << report.count(Verdict::kSkipped) << "\" time=\""
    << seconds(report.seconds) << "\">\n";
  properties(s, report);
  for (const auto& [key, g] : report.groups()) {
    const auto& [side, suite, op, format] = key;
    const std::string group = side + "." + suite + "." + op + "." + format;
    s << "  <testsuite name=\"" << xml_escape(group, true) << "\" tests=\"" << g.passed + g.failed + g.skipped
      << "\" failures=\"" << g.failed << "\" errors=\"0\" skipped=\"" << g.skipped << "\" time=\"" << seconds(g.seconds)
      << "\">\n";
    for (const CheckResult& c : report.checks) {
      if (c.group() != group) continue;
      s << "    <testcase classname=\"" << xml_escape(group, true) << "\" name=\"" << xml_escape(c.name, true)
        << "\" time=\"" << seconds(c.seconds) << "\"";
      if (c.verdict == Verdict::kPassed) {
        s << "/>\n";
        continue;
      }
      s << ">\n";
      if (c.verdict == Verdict::kSkipped) {
        s << "      <skipped message=\"" << xml_escape(c.message, true) << "\"/>\n";
      } else {
        std::string text = c.message;
        if (!c.classes.empty()) text += "\n" + c.classes.report();
        s << "      <failure message=\"" << xml_escape(first_line(c.message), true) << "\" type=\"mismatch\">"
          << xml_escape(text) << "</failure>\n";
      }
      s << "    </testcase>\n";
    }
    s << "  </testsuite>\n";
  }
  s << "</testsuites>\n";
  return s.str();
}

}  // namespace kvc::runner
