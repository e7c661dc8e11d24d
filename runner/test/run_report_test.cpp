// run_report_test.cpp: the runner's reports: XML escaping, JUnit XML that parses (checked by
// python3's xml.etree through check_junit.py), JSON, the summary and the exit status.
//
// Catches: an unescaped '&', '<' or quote in a message (a parse error in CI's JUnit reader), a
// control character or a byte that is not UTF-8 copied into the XML (not well-formed), counts in
// <testsuite> attributes that disagree with its testcases, a skipped check counted as passed, a
// run that exits 0 although kernel conformance was skipped without --cpu-only.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "json_report.h"
#include "junit_xml.h"
#include "run_report.h"

namespace kvc::runner {
namespace {

// Everything a hostile report can hold: XML syntax, quotes, control characters, bytes that are
// not UTF-8, valid multi-byte UTF-8, CR and tabs.
const std::string kHostile = std::string("a & b < c > d \"q\" 'a' \x01\x1b[0m \t tab\r\nline2 ") + "\xff\xfe " +
                             "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 " + "\xed\xa0\x80 \xc0\xaf" + std::string(1, '\0');

RunReport sample_report() {
  RunReport r;
  r.kernels_ran = true;
  CheckResult pass;
  pass.side = kKernelSide;
  pass.suite = "matrix";
  pass.op = "kv_only";
  pass.format = "packed584";
  pass.name = "Packed584_Tokens1_Bs16_Dense";
  r.checks.push_back(pass);
  CheckResult fail = pass;
  fail.name = "Packed584_Tokens17_Bs16_Dense & <odd>";
  fail.verdict = Verdict::kFailed;
  fail.message = "first line " + kHostile + "\nsecond line";
  testkit::ClassifiedSite site;
  site.cls = testkit::MismatchClass::kRoundingTie;
  site.where = "slot 3 (page 0 token 3, row 1)";
  site.detail = "e4m3 ties rounded away from zero";
  site.bytes = 2;
  fail.classes.add(site);
  r.checks.push_back(fail);
  CheckResult skip = pass;
  skip.format = "bf16_512";
  skip.name = "Bf16_512_Tokens1_Bs16_Dense";
  skip.verdict = Verdict::kSkipped;
  skip.message = "not implemented: " + kHostile;
  r.checks.push_back(skip);
  return r;
}

std::string python3() {
#ifdef KVC_PYTHON3
  return KVC_PYTHON3;
#else
  return "";
#endif
}

TEST(XmlEscape, EntitiesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(xml_escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  EXPECT_EQ(xml_escape(std::string("\x01") + "x" + std::string(1, '\0')), "\\x01x\\x00");
  EXPECT_EQ(xml_escape("\t\n"), "\t\n");
  EXPECT_EQ(xml_escape("\t\n", true), "&#9;&#10;");
  EXPECT_EQ(xml_escape("\r"), "&#13;");
  EXPECT_EQ(xml_escape("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")
      << "valid UTF-8 is kept";
  EXPECT_EQ(xml_escape("\xff"), "\\xFF");
  EXPECT_EQ(xml_escape("\xc0\xaf"), "\\xC0\\xAF") << "overlong form";
  EXPECT_EQ(xml_escape("\xed\xa0\x80"), "\\xED\\xA0\\x80") << "surrogate";
  EXPECT_EQ(xml_escape("\xef\xbf\xbe"), "\\xEF\\xBF\\xBE") << "U+FFFE is not an XML character";
  EXPECT_EQ(xml_escape("\xe2\x82"), "\\xE2\\x82") << "truncated sequence";
}

TEST(JunitXml, HostileTextParsesAndCountsAddUp) {
  const std::string python = python3();
  if (python.empty()) GTEST_SKIP() << "python3 not found at configure time: cannot check the XML with xml.etree";
  const std::string xml = junit_xml(sample_report());
  EXPECT_NE(xml.find("<failure message=\"first line a &amp; b &lt; c"), std::string::npos) << xml;
  EXPECT_NE(xml.find("rounding tie"), std::string::npos) << "the failure text carries the mismatch classes";
  const std::string path = ::testing::TempDir() + "kvc-junit-sample.xml";
  std::ofstream(path, std::ios::binary) << xml;
  const std::string command =
      "'" + python + "' '" + KVC_CHECK_JUNIT + "' '" + path + "' --expect-failures 1 --expect-skipped 1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command << "\n" << xml;

  // The checker itself catches a broken file: an unescaped ampersand, and counts that disagree.
  std::ofstream(path, std::ios::binary) << "<testsuites tests=\"1\" failures=\"0\" skipped=\"0\"><testsuite "
                                           "name=\"a\" tests=\"1\" failures=\"0\" skipped=\"0\"><testcase "
                                           "classname=\"a\" name=\"x & y\"/></testsuite></testsuites>";
  EXPECT_NE(std::system(command.c_str()), 0) << "an unescaped & must not parse";
  std::ofstream(path, std::ios::binary) << "<testsuites tests=\"2\" failures=\"0\" skipped=\"0\"><testsuite "
                                           "name=\"a\" tests=\"1\" failures=\"0\" skipped=\"0\"><testcase "
                                           "classname=\"a\" name=\"x\"/></testsuite></testsuites>";
  EXPECT_NE(std::system(command.c_str()), 0) << "counts that disagree must be caught";
}

TEST(RunJson, CountsSummaryAndClassesRoundTrip) {
  const RunReport r = sample_report();
  const nlohmann::json j =
      nlohmann::json::parse(run_to_json(r).dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  EXPECT_EQ(j.at("counts").at("passed").get<int>(), 1);
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), 1);
  EXPECT_EQ(j.at("counts").at("skipped").get<int>(), 1);
  EXPECT_EQ(j.at("exit_code").get<int>(), kRunFailed);
  EXPECT_EQ(j.at("mismatch_classes").at("sites").at("rounding_tie").get<int>(), 1);
  ASSERT_EQ(j.at("summary").size(), 2u) << "packed584 and bf16_512 rows";
  EXPECT_EQ(j.at("summary")[1].at("skip_reasons").size(), 1u);
  ASSERT_EQ(j.at("checks").size(), 3u);
  EXPECT_EQ(j.at("checks")[1].at("verdict").get<std::string>(), "failed");
  EXPECT_TRUE(j.at("checks")[1].contains("mismatch_classes"));
}

TEST(RunReport, ExitStatusAndTheLoudSkip) {
  RunReport r;
  CheckResult pass;
  pass.side = kOracleSide;
  pass.suite = "golden";
  pass.op = "kv_only";
  pass.format = "packed584";
  pass.name = "kv_only.packed584";
  r.checks.push_back(pass);
  r.kernels_skipped_reason = "no CUDA device";
  EXPECT_EQ(r.exit_code(), kRunKernelsSkipped) << "skipped kernel conformance is not a pass";
  EXPECT_NE(r.summary().find("KERNEL CONFORMANCE SKIPPED: no CUDA device"), std::string::npos) << r.summary();
  EXPECT_NE(r.summary().find("INCOMPLETE"), std::string::npos);
  r.cpu_only = true;
  EXPECT_EQ(r.exit_code(), kRunPassed);
  r.checks.push_back(pass);
  r.checks.back().verdict = Verdict::kFailed;
  EXPECT_EQ(r.exit_code(), kRunFailed);
  EXPECT_NE(r.summary().find("FAILED"), std::string::npos);
  r.checks.back().verdict = Verdict::kSkipped;
  r.checks.back().message = "why";
  EXPECT_EQ(r.exit_code(), kRunPassed) << "a skip is neither a pass nor a failure";
  EXPECT_NE(r.summary().find("1 x why"), std::string::npos) << r.summary();
}

}  // namespace
}  // namespace kvc::runner
