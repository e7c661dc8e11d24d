#!/usr/bin/env python3
"""double_verdicts.py: whether a ctest run against a test double gave the verdict it must.

Usage: double_verdicts.py FILE.xml --must-fail REGEX|-

FILE is what `ctest --output-junit FILE` wrote for a GPU suite run with KVC_KERNELS=<double>.
Every test whose name matches --must-fail (a Python regex, searched; "-" for none) must have
failed; every other test must have passed or been skipped. A run with no test that passed or
failed as required compared nothing and is itself a wrong verdict. Prints the counts and every
test on the wrong side, with the first line of its failure or skip reason. Exit 0 when the verdict
is right, 1 when it is not, 2 when the file cannot be read.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET


def outcome(case):
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    if case.find("skipped") is not None:
        return "skipped"
    return "passed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--must-fail", default="-")
    args = parser.parse_args()
    try:
        root = ET.parse(args.file).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"cannot read {args.file}: {e}")
        return 2
    must_fail = None if args.must_fail == "-" else re.compile(args.must_fail)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    wrong = []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        got = outcome(case)
        counts[got] += 1
        expected_failure = must_fail is not None and must_fail.search(name) is not None
        if expected_failure and got != "failed":
            wrong.append(f"{name}: {got}, must fail")
        elif not expected_failure and got == "failed":
            wrong.append(f"{name}: failed, must pass or skip")
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    if counts["passed"] + counts["failed"] == 0:
        wrong.append("no test passed or failed: nothing was compared")
    for w in wrong[:40]:
        print(f"  WRONG VERDICT {w}")
    if len(wrong) > 40:
        print(f"  ... and {len(wrong) - 40} more")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
