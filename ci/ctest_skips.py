#!/usr/bin/env python3
"""ctest_skips.py: the tests a ctest run skipped, grouped by reason, from its JUnit file.

Usage: ctest_skips.py FILE.xml [--examples N]

FILE is what `ctest --output-junit FILE` wrote. A skipped test is a <testcase> with a <skipped>
child (ctest: status "notrun"). Its reason is the GoogleTest skip message (the lines after
"<file>:<line>: Skipped" in its output), else a KVC_SANITIZER_SKIPPED line (compute-sanitizer
entries), else the <skipped message=...> ctest gives. Prints "N skipped" and, per reason, the
count and the first few test names; prints nothing else when none was skipped. Exit 0, or 2 when
the file cannot be read.
"""
import argparse
import collections
import re
import sys
import xml.etree.ElementTree as ET

GTEST_SKIP = re.compile(r":\d+: Skipped\n(.*?)\n\[  SKIPPED \]", re.S)
SANITIZER_SKIP = re.compile(r"^KVC_SANITIZER_SKIPPED: (.*)$", re.M)


def reason_of(case):
    out = case.findtext("system-out") or ""
    m = GTEST_SKIP.search(out)
    if m and m.group(1).strip():
        return " ".join(m.group(1).split())
    m = SANITIZER_SKIP.search(out)
    if m:
        return m.group(1).strip()
    skipped = case.find("skipped")
    return (skipped.get("message") if skipped is not None else None) or "(no reason given)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    try:
        root = ET.parse(args.file).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"cannot read {args.file}: {e}")
        return 2
    by_reason = collections.OrderedDict()
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        by_reason.setdefault(reason_of(case), []).append(case.get("name", "?"))
    total = sum(len(v) for v in by_reason.values())
    print(f"{total} skipped")
    for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(names[: args.examples]) + (", ..." if len(names) > args.examples else "")
        print(f"  {len(names)} x {reason}")
        print(f"      e.g. {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
