// junit_xml.h: a run's checks as JUnit XML, the report format CI systems read.
//
//   <testsuites name="kvconform" tests= failures= errors="0" skipped= time=>
//     <properties>  the run, said once: library, device, profile, verdict, exit_code,
//                   kernel_bytes_compared, and per ABI op coverage.<op>.{status, exported,
//                   declared_supported, checks, passed, failed, skipped, bytes_compared}
//                   (the coverage when a library was loaded), approx_rsqrt when it applied,
//                   incident.1, incident.2, ... (a check that ended its process, a suite that
//                   ended early: suite_children.h)
//     </properties>
//     <testsuite name="kernel.matrix.kv_only.packed584" tests= failures= errors="0" skipped= time=>
//       <testcase classname="kernel.matrix.kv_only.packed584" name="Packed584_Tokens17_Bs16_Padded" time=>
//         <failure message="first line of the report" type="mismatch">the whole report</failure>
//         or <skipped message="the reason"/>
//
// One testsuite per summary group (where, suite, op, format); the library is named in the
// properties only (check messages call it "the library"). Every text goes through
// xml_escape(), since reports carry arbitrary bytes' descriptions, paths and library messages.
#pragma once

#include <string>
#include <string_view>

#include "run_report.h"

namespace kvc::runner {

// Text and attribute values for XML 1.0: & < > " ' as entities; tab, LF and CR kept (as numeric
// references inside attributes, so that a parser keeps them); every other control character
// and every byte that is not part of valid UTF-8 written as the text "\xNN" (XML 1.0 cannot
// carry them at all, not even as references).
std::string xml_escape(std::string_view text, bool attribute = false);

std::string junit_xml(const RunReport& report);

}  // namespace kvc::runner
