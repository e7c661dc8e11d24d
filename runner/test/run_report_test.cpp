// run_report_test.cpp: the runner's reports: XML escaping, JUnit XML that parses (checked by
// python3's xml.etree through check_junit.py), JSON, the summary and the exit status.
//
// Catches: an unescaped '&', '<' or quote in a message (a parse error in CI's JUnit reader), a
// control character or a byte that is not UTF-8 copied into the XML (not well-formed), counts in
// <testsuite> attributes that disagree with its testcases, a skipped check counted as passed, a
// run that exits 0 although kernel conformance was skipped without --cpu-only; and the verdict
// rules of the coverage per ABI op (each test names the defect it catches): a run that compared
// no kernel byte reported PASSED, an op the library declares supported left uncovered without
// a word, an op the library does not export listed as passed, an op left out by --ops counted
// against the run, the library's path repeated in every message, the approximate-rsqrt tally
// missing from a passing run, skip reasons of several suites not grouped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "json_report.h"
#include "junit_xml.h"
#include "library_mentions.h"
#include "run_report.h"

namespace kvc::runner {
namespace {

// Everything a hostile report can hold: XML syntax, quotes, control characters, bytes that are
// not UTF-8, valid multi-byte UTF-8, CR and tabs.
const std::string kHostile = std::string("a & b < c > d \"q\" 'a' \x01\x1b[0m \t tab\r\nline2 ") + "\xff\xfe " +
                             "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 " + "\xed\xa0\x80 \xc0\xaf" + std::string(1, '\0');

RunReport sample_report() {
  RunReport r;
  r.kernel_suites_ran = true;
  CheckResult pass;
  pass.side = kKernelSide;
  pass.suite = "matrix";
  pass.op = "kv_only";
  pass.format = "packed584";
  pass.name = "Packed584_Tokens1_Bs16_Dense";
  pass.add_bytes(AbiOp::kKvOnly, 4096);
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

// ---- the verdict rules of the coverage per ABI op ----

OpDeclaration declared(AbiOp op, Export exported = Export::kExported, std::vector<std::string> supported = {}) {
  OpDeclaration d;
  d.op = op;
  d.exported = exported;
  d.supported = std::move(supported);
  if (!d.supported.empty()) d.profiles = {"vllm"};
  return d;
}

// Every op of the ABI declared; `supported` ones declared supported for packed584/bf16.
std::vector<OpDeclaration> declarations(const std::vector<AbiOp>& supported,
                                        const std::vector<AbiOp>& not_exported = {}) {
  std::vector<OpDeclaration> out;
  for (AbiOp op : kAllAbiOps) {
    const bool yes = std::count(supported.begin(), supported.end(), op) > 0;
    const bool exported = std::count(not_exported.begin(), not_exported.end(), op) == 0;
    out.push_back(declared(op, exported ? Export::kExported : Export::kNotExported,
                           yes ? std::vector<std::string>{"packed584/bf16"} : std::vector<std::string>{}));
  }
  return out;
}

CheckResult kernel_check(AbiOp op, const char* suite, Verdict verdict, std::int64_t bytes,
                         const std::string& message = "") {
  CheckResult c = make_check(kKernelSide, suite, std::string(abi_op_name(op)), "packed584", "Case");
  c.verdict = verdict;
  c.message = message;
  c.add_bytes(op, bytes);
  return c;
}

const OpCoverage& coverage_of(const std::vector<OpCoverage>& all, AbiOp op) {
  for (const OpCoverage& c : all)
    if (c.op == op) return c;
  throw std::logic_error("no coverage row");
}

nlohmann::json json_of(const RunReport& r) {
  return nlohmann::json::parse(run_to_json(r).dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// The defect of the report this was written for: a library exporting only kvc_store_rotated got
// PASSED, exit 0 and kernel_conformance.ran true with no byte compared.
TEST(RunReportCoverage, NoKernelByteComparedIsNothingCheckedNeverPassed) {
  RunReport r;
  r.kernel_suites_ran = true;
  r.declarations = declarations({AbiOp::kStoreRotated});
  const std::string reason = "the library does not implement kv_only_insert for packed584 with bf16 kv";
  for (int i = 0; i < 3; ++i) r.checks.push_back(kernel_check(AbiOp::kKvOnly, "matrix", Verdict::kSkipped, 0, reason));
  r.checks.push_back(kernel_check(AbiOp::kLegacy, "golden", Verdict::kSkipped, 0, reason));
  EXPECT_EQ(r.kernel_bytes_compared(), 0);
  EXPECT_EQ(r.verdict(), RunVerdict::kNothingChecked);
  EXPECT_EQ(r.exit_code(), kRunNothingChecked);
  EXPECT_EQ(kRunNothingChecked, 4);
  const std::string text = r.summary();
  EXPECT_EQ(text.find("PASSED"), std::string::npos) << text;
  EXPECT_NE(text.find("NOTHING CHECKED"), std::string::npos) << text;
  const nlohmann::json j = json_of(r);
  EXPECT_FALSE(j.at("kernel_conformance").at("ran").get<bool>()) << "ran means: kernel bytes were compared";
  EXPECT_TRUE(j.at("kernel_conformance").at("suites_ran").get<bool>());
  EXPECT_EQ(j.at("kernel_conformance").at("kernel_bytes_compared").get<std::int64_t>(), 0);
  EXPECT_EQ(j.at("verdict").get<std::string>(), "nothing_checked");
  EXPECT_EQ(j.at("exit_code").get<int>(), kRunNothingChecked);
  // A failure still wins: the run is FAILED whatever it compared.
  r.checks.push_back(kernel_check(AbiOp::kKvOnly, "invalid", Verdict::kFailed, 0, "status differs"));
  EXPECT_EQ(r.exit_code(), kRunFailed);
}

// Defect: an op the library exports and declares supported compared no byte (its suite was
// trimmed away, or every case skipped) and the run still said PASSED.
TEST(RunReportCoverage, DeclaredSupportedOpWithoutBytesIsIncomplete) {
  RunReport r;
  r.kernel_suites_ran = true;
  r.declarations = declarations({AbiOp::kKvOnly, AbiOp::kStoreRotated});
  r.checks.push_back(kernel_check(AbiOp::kKvOnly, "matrix", Verdict::kPassed, 100000));
  r.checks.push_back(kernel_check(AbiOp::kStoreRotated, "store", Verdict::kSkipped, 0, "trimmed"));
  EXPECT_EQ(r.verdict(), RunVerdict::kIncomplete);
  EXPECT_EQ(r.exit_code(), kRunIncomplete);
  ASSERT_EQ(r.uncovered_ops(), std::vector<AbiOp>{AbiOp::kStoreRotated});
  const std::vector<OpCoverage> cov = r.coverage();
  EXPECT_EQ(coverage_of(cov, AbiOp::kKvOnly).status, OpStatus::kCovered);
  EXPECT_EQ(coverage_of(cov, AbiOp::kKvOnly).bytes_compared, 100000);
  EXPECT_EQ(coverage_of(cov, AbiOp::kStoreRotated).status, OpStatus::kUncovered);
  EXPECT_EQ(coverage_of(cov, AbiOp::kStoreRotated).skipped, 1);
  EXPECT_EQ(coverage_of(cov, AbiOp::kLegacy).status, OpStatus::kNotDeclared);
  const std::string text = r.summary();
  EXPECT_EQ(text.find("PASSED"), std::string::npos) << text;
  EXPECT_NE(text.find("INCOMPLETE: op store_rotated declared supported but no bytes compared"), std::string::npos)
      << text;
  const nlohmann::json j = json_of(r);
  EXPECT_TRUE(j.at("kernel_conformance").at("ran").get<bool>());
  EXPECT_EQ(j.at("kernel_conformance").at("kernel_bytes_compared").get<std::int64_t>(), 100000);
  EXPECT_EQ(j.at("verdict").get<std::string>(), "incomplete");
  bool found = false;
  for (const auto& row : j.at("coverage"))
    if (row.at("op") == "store_rotated") {
      found = true;
      EXPECT_EQ(row.at("status").get<std::string>(), "INCOMPLETE");
      EXPECT_EQ(row.at("declared_supported").size(), 1u);
    }
  EXPECT_TRUE(found);
}

// Defects: an optional entry point the library does not export shown as passed (or not shown at
// all), and an op that --ops or --suites left out counted against the run.
TEST(RunReportCoverage, NotExportedAndNotSelectedOpsAreListedNeitherPassedNorIncomplete) {
  RunReport r;
  r.kernel_suites_ran = true;
  r.declarations = declarations({AbiOp::kKvOnly, AbiOp::kLegacy, AbiOp::kStoreRotated}, {AbiOp::kStoreRotated});
  r.selected_ops = {AbiOp::kKvOnly, AbiOp::kStoreRotated, AbiOp::kStackedCtxKv};  // legacy left out
  r.checks.push_back(kernel_check(AbiOp::kKvOnly, "matrix", Verdict::kPassed, 512));
  r.checks.push_back(kernel_check(AbiOp::kStoreRotated, "store", Verdict::kSkipped, 0,
                                  "the library does not export kvc_store_rotated"));
  EXPECT_EQ(r.exit_code(), kRunPassed);
  const std::vector<OpCoverage> cov = r.coverage();
  EXPECT_EQ(coverage_of(cov, AbiOp::kStoreRotated).status, OpStatus::kNotExported);
  EXPECT_EQ(coverage_of(cov, AbiOp::kStoreRotated).passed, 0);
  EXPECT_EQ(coverage_of(cov, AbiOp::kLegacy).status, OpStatus::kNotSelected);
  const std::string text = r.summary();
  EXPECT_NE(text.find("kvc_store_rotated NOT EXPORTED"), std::string::npos) << text;
  EXPECT_NE(text.find("not exported"), std::string::npos) << text;
  EXPECT_NE(text.find("not selected"), std::string::npos) << text;
  EXPECT_NE(text.find("PASSED"), std::string::npos) << text;
  const nlohmann::json report_json = json_of(r);  // the range-for below must not outlive it
  for (const auto& row : report_json.at("coverage"))
    if (row.at("op") == "store_rotated") {
      EXPECT_FALSE(row.at("exported").get<bool>());
      EXPECT_EQ(row.at("status").get<std::string>(), "not exported");
    }
  const std::string xml = junit_xml(r);
  EXPECT_NE(xml.find("<property name=\"coverage.store_rotated.status\" value=\"not exported\"/>"), std::string::npos)
      << xml;
}

// Defect: the library's long path repeated in every report line (skip reasons, failures).
TEST(RunReportCoverage, TheLibraryIsNamedOnce) {
  const LibraryMentions m{"device:shim 1.0 (/very/long/path/to/libshim.so, ABI 1.1)",
                          "shim 1.0 (/very/long/path/to/libshim.so, ABI 1.1)", "shim 1.0"};
  EXPECT_EQ(library_named_once("device:shim 1.0 (/very/long/path/to/libshim.so, ABI 1.1): status differs", m),
            "the library: status differs");
  EXPECT_EQ(
      library_named_once("shim 1.0 (/very/long/path/to/libshim.so, ABI 1.1) does not export kvc_store_rotated", m),
      "the library does not export kvc_store_rotated");
  EXPECT_EQ(library_named_once("shim 1.0 does not implement kv_norm: no", m),
            "the library does not implement kv_norm: no");
  const LibraryMentions vllm{"device:vllm (/p.so, ABI 1.1)", "vllm (/p.so, ABI 1.1)", "vllm"};
  EXPECT_EQ(library_named_once("declared profile `vllm`", vllm), "declared profile `vllm`")
      << "a short name is replaced only where it names the library";

  RunReport r = sample_report();
  r.library = m.description;
  r.declarations = declarations({AbiOp::kKvOnly});
  const std::string xml = junit_xml(r);
  std::size_t mentions = 0;
  for (std::size_t at = xml.find("/very/long/path"); at != std::string::npos; at = xml.find("/very/long/path", at + 1))
    ++mentions;
  EXPECT_EQ(mentions, 1u) << xml;
  EXPECT_NE(xml.find("<property name=\"library\""), std::string::npos);
  EXPECT_EQ(json_of(r).at("library").get<std::string>(), m.description);
}

// Defect: a passing run under a declared approximate rsqrt that does not say how much of the
// window it used.
TEST(RunReportCoverage, ApproximateRsqrtTallyInAPassingRun) {
  RunReport r;
  r.kernel_suites_ran = true;
  r.declarations = declarations({AbiOp::kLegacy});
  CheckResult c = kernel_check(AbiOp::kLegacy, "matrix", Verdict::kPassed, 2048);
  testkit::ApproxRsqrtResult a;
  a.mode = RsqrtMode::kApproximate;
  a.accepted = true;
  a.norm_rows = 64;
  a.moved = {{testkit::NormRow{}, 1}, {testkit::NormRow{}, -2}};
  c.rsqrt.add(a);
  testkit::ApproxRsqrtResult exact;  // the correctly rounded mode grants nothing: not tallied
  exact.norm_rows = 1000;
  c.rsqrt.add(exact);
  r.checks.push_back(c);
  EXPECT_EQ(r.exit_code(), kRunPassed);
  const std::string text = r.summary();
  EXPECT_NE(text.find("64 norm rows checked under the declared approximate rsqrt, 2 needed r' != r, max |r' - r| = "
                      "2 ulps"),
            std::string::npos)
      << text;
  const nlohmann::json j = json_of(r);
  EXPECT_EQ(j.at("approx_rsqrt").at("rows_checked").get<int>(), 64);
  EXPECT_EQ(j.at("approx_rsqrt").at("rows_moved").get<int>(), 2);
  EXPECT_EQ(j.at("approx_rsqrt").at("max_ulps").get<int>(), 2);
}

// Defect: one reason (an op the library does not implement) listed once per suite and format
// instead of once, with its count and where it applied.
TEST(RunReportCoverage, SkipReasonsAreGroupedAcrossSuitesWithCounts) {
  RunReport r;
  r.kernel_suites_ran = true;
  const std::string reason = "the library does not export kvc_stacked_ctx_kv";
  for (int i = 0; i < 4; ++i)
    r.checks.push_back(kernel_check(AbiOp::kStackedCtxKv, "stacked", Verdict::kSkipped, 0, reason));
  CheckResult other = kernel_check(AbiOp::kStoreRotated, "store", Verdict::kSkipped, 0, reason);
  other.format = "packed528";
  r.checks.push_back(other);
  const std::string text = r.summary();
  EXPECT_NE(text.find("5 x " + reason), std::string::npos) << text;
  EXPECT_NE(text.find("kernel stacked stacked_ctx_kv packed584 (4), kernel store store_rotated packed528 (1)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace kvc::runner
