#!/usr/bin/env python3
"""check_junit.py: a JUnit XML file is well-formed and its counts add up.

Usage: check_junit.py FILE [--expect-failures N|any|none] [--expect-skipped any|none]

Parses FILE with xml.etree.ElementTree (so any escaping mistake is a parse error), then checks
that <testsuites> and every <testsuite> carry tests/failures/skipped attributes equal to the
<testcase>, <failure> and <skipped> elements they hold. Prints the totals; exit 0 when all holds.
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--expect-failures", default=None)
    parser.add_argument("--expect-skipped", default=None)
    args = parser.parse_args()
    try:
        root = ET.parse(args.file).getroot()
    except ET.ParseError as e:
        print(f"{args.file}: not well-formed XML: {e}")
        return 1
    problems = []
    if root.tag != "testsuites":
        problems.append(f"root element is <{root.tag}>, not <testsuites>")
    total = {"tests": 0, "failures": 0, "skipped": 0}
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(len(c.findall("failure")) for c in cases),
            "skipped": sum(len(c.findall("skipped")) for c in cases),
        }
        for key, value in counts.items():
            total[key] += value
            if int(suite.get(key, "-1")) != value:
                problems.append(f"testsuite {suite.get('name')}: {key}={suite.get(key)} but {value} elements")
        for case in cases:
            if not case.get("name") or not case.get("classname"):
                problems.append(f"testcase without name or classname in {suite.get('name')}")
    for key, value in total.items():
        if int(root.get(key, "-1")) != value:
            problems.append(f"testsuites: {key}={root.get(key)} but {value} elements")
    if total["tests"] == 0:
        problems.append("no testcase at all")
    for key, expect in (("failures", args.expect_failures), ("skipped", args.expect_skipped)):
        if expect == "none" and total[key] != 0:
            problems.append(f"expected no {key}, found {total[key]}")
        elif expect == "any" and total[key] == 0:
            problems.append(f"expected some {key}, found none")
        elif expect not in (None, "none", "any") and total[key] != int(expect):
            problems.append(f"expected {expect} {key}, found {total[key]}")
    print(f"{args.file}: {total['tests']} testcases, {total['failures']} failures, {total['skipped']} skipped")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
