#!/usr/bin/env python3
"""mutants_driver_test.py: the mutation driver's own pieces (ci/mutants.py), each against a planted
defect. Python 3 standard library (unittest); registered as the ctest test mutation.driver_test.

The driver decides what a mutation run reports, so its parts must be able to fail: the catalog
check must refuse each kind of bad entry (and accept a good one), the ctest and runner parsers
must name every kind of failure and never count a pass or a skip as a kill, and the sample and the
score must count what they say.

Catches: a check that accepts a missing or unknown field, a duplicate or non-snake_case name, a
class outside docs/mutation.md, an anchor that occurs zero or several times (overlapping ones
included), find == replace, a file outside the target's directory or missing; a failure parser
that misses a timeout, a signal, an abort or a test that did not run, or that reads "Passed" or
"Skipped" as a failure; a runner left running after its first failed check (device time), a
silent hang that never times out; a sample that is not spread over the catalog, shards that miss or repeat a mutant; a score that counts a
survivor as killed.
"""
import json
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.dont_write_bytecode = True  # no ci/__pycache__ in the source tree (the driver copies the tree)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ci"))
import mutants  # noqa: E402

# An anchor that occurs exactly once: the first line of a small oracle source.
GOOD = {
    "name": "good_entry",
    "target": "oracle",
    "file": "oracle/src/rope.cpp",
    "find": "// rope.cpp: RoPE rotations (see rope.h).",
    "replace": "// rope.cpp: changed",
    "class": "rope-pairing",
    "models": "m",
    "reveals": "r",
    "expected_killer": "k",
    "observable": "o",
}


def errors_of(entries, raw=None):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "catalog.json"
        path.write_text(raw if raw is not None else json.dumps({"mutants": entries}))
        _, errors = mutants.check_catalogs([path])
    return errors


def entry(**changes):
    e = dict(GOOD)
    for k, v in changes.items():
        if v is None:
            del e[k]
        else:
            e[k] = v
    return e


class CheckRefusesEachDefect(unittest.TestCase):
    def assertRefused(self, entries, text, raw=None):
        errors = errors_of(entries, raw)
        self.assertTrue(any(text in e for e in errors), f"no error containing {text!r}: {errors}")

    def test_a_good_entry_passes(self):
        self.assertEqual(errors_of([GOOD]), [])

    def test_missing_and_unknown_fields(self):
        self.assertRefused([entry(observable=None)], "missing observable")
        self.assertRefused([entry(extra="x")], "unknown field(s) extra")
        self.assertRefused([entry(models="  ")], "models must be a non-empty string")

    def test_names(self):
        self.assertRefused([GOOD, entry(replace="// other")], "also used")
        self.assertRefused([entry(name="Not-Snake")], "not snake_case")

    def test_class_outside_the_list(self):
        self.assertRefused([entry(**{"class": "no-such-class"})], "is not in docs/mutation.md")

    def test_anchor_must_occur_exactly_once(self):
        self.assertRefused([entry(find="no such text anywhere 1f3a")], "find occurs 0 times")
        errors = errors_of([entry(find="kRopePairs")])  # several times in rope.cpp
        self.assertTrue(any("find occurs" in e and "occurs 1 times" not in e for e in errors), errors)
        self.assertEqual(mutants.occurrences("aaa", "aa"), 2, "overlapping occurrences count")

    def test_no_change_and_wrong_places(self):
        self.assertRefused([entry(replace=GOOD["find"])], "find == replace")
        self.assertRefused([entry(file="kernels/CMakeLists.txt")], "outside oracle/")
        self.assertRefused([entry(file="oracle/src/missing.cpp")], "no file")
        self.assertRefused([entry(file="../etc/passwd")], "no file")
        self.assertRefused([entry(target="planet")], "target must be one of")

    def test_catalog_shape(self):
        self.assertRefused([], "must be", raw=json.dumps([GOOD]))
        self.assertRefused([], "cannot read", raw="{not json")


class FailureParsers(unittest.TestCase):
    def test_ctest_result_lines(self):
        lines = {
            "1/7 Test #1: Pass.A ...........................   Passed    0.14 sec": None,
            "2/7 Test #2: Fail.B ...........................***Failed    0.14 sec": "Fail.B",
            "3/7 Test #3: Seg.C ............................***Exception: SegFault  0.11 sec":
                "Seg.C (Exception: SegFault)",
            "4/7 Test #5: Skip.E ...........................***Skipped   0.07 sec": None,
            "5/7 Test #6: NotRun.F .........................***Not Run   0.00 sec": "NotRun.F (Not Run)",
            "6/7 Test #7: Abort.G ..........................Subprocess aborted***Exception:   0.03 sec":
                "Abort.G (Subprocess aborted Exception:)",
            "7/7 Test #4: Slow.D ...........................***Timeout   1.02 sec": "Slow.D (Timeout)",
            "    Start 2: Fail.B": None,
        }
        for line, want in lines.items():
            m = mutants.CTEST_FAILED_RE.search(line)
            self.assertEqual(mutants.ctest_failure_name(m) if m else None, want, line)

    def test_runner_progress_lines(self):
        failed = "  [   1/   2] kernel golden packed584 kv_only.packed584: failed (0.00 s)"
        m = mutants.RUNNER_FAILED_RE.search(failed)
        self.assertIsNotNone(m)
        self.assertEqual((m.group(1), m.group(2)), ("kernel", "golden packed584 kv_only.packed584"))
        for line in ("  [  37/  84] kernel matrix packed584 Packed584_Tokens16384: passed (12.00 s)",
                     "  -- kernel matrix: check [37/84] ended its process"):
            self.assertIsNone(mutants.RUNNER_FAILED_RE.search(line), line)


class Streaming(unittest.TestCase):
    """The runner has no stop-on-failure of its own: the driver ends it at its first failed check."""

    def run_with(self, script, **kw):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            rc, first, seconds = mutants.run_streamed(["sh", "-c", script], Path(d) / "log", mutants.RUNNER_FAILED_RE,
                                                      **kw)
            return rc, first, seconds, time.monotonic() - t0

    def test_stops_at_the_first_failed_check(self):
        rc, first, seconds, wall = self.run_with(
            "echo '  [ 1/ 9] kernel matrix packed584 A: passed (1.00 s)'; "
            "echo '  [ 2/ 9] kernel matrix packed584 B: failed (1.00 s)'; sleep 60", stop_on_match=True)
        self.assertEqual(first.group(2), "matrix packed584 B")
        self.assertLess(seconds, 10)
        self.assertLess(wall, 20, "the process group was not ended at the first failure")

    def test_a_silent_hang_ends_at_the_timeout(self):
        rc, first, _, wall = self.run_with("sleep 60", timeout=1)
        self.assertIsNone(rc, "a hang must be reported as such (None)")
        self.assertIsNone(first)
        self.assertLess(wall, 20)

    def test_exit_status_without_a_failure(self):
        rc, first, _, _ = self.run_with("echo nothing failed; exit 5", timeout=30)
        self.assertEqual((rc, first), (5, None))


class SampleAndScore(unittest.TestCase):
    def test_sample_is_spread_and_only_keeps_order(self):
        entries = [{"name": f"m{i}"} for i in range(10)]
        self.assertEqual([e["name"] for e in mutants.select(entries, None, 3)], ["m0", "m3", "m6"])
        self.assertEqual([e["name"] for e in mutants.select(entries, "m7,m2", None)], ["m7", "m2"])
        with self.assertRaises(SystemExit):
            mutants.select(entries, "m99", None)
        shards = [[e["name"] for e in mutants.select(entries, None, None, (k, 3))] for k in (1, 2, 3)]
        self.assertEqual(shards[1], ["m1", "m4", "m7"])
        self.assertEqual(sorted(sum(shards, [])), sorted(e["name"] for e in entries), "shards cover the run once")
        for bad in ("0/3", "4/3", "x"):
            with self.assertRaises(SystemExit):
                mutants.parse_shard(bad)

    def test_score_counts_only_kills(self):
        results = [{"status": "killed", "seconds_to_kill": 2.0}, {"status": "killed", "seconds_to_kill": 6.0},
                   {"status": "survived", "seconds_to_kill": None},
                   {"status": "build_failed", "seconds_to_kill": None}]
        s = mutants.summary(results, build_only=False)
        self.assertEqual((s["killed"], s["scored"], s["median_seconds_to_kill"]), (2, 3, 4.0))
        self.assertTrue(s["line"].startswith("mutation score: 2 of 3 killed (66.7%), median seconds to kill 4.0"),
                        s["line"])
        self.assertIn("1 build_failed", s["line"])
        # Running out of the driver's time is no kill: it counts against the score.
        s = mutants.summary(results + [{"status": "timed_out", "seconds_to_kill": None}], build_only=False)
        self.assertEqual((s["killed"], s["scored"], s["timed_out"]), (2, 4, 1))

    def test_the_class_list_is_read_from_the_doc(self):
        classes = mutants.bug_classes()
        self.assertIn("clamp-order", classes)
        self.assertEqual(len(classes), len(set(classes)), "a class listed twice")


class LibraryStamp(unittest.TestCase):
    """A mutant library is reused only when what it is compiled from is unchanged: a digest that
    ignored kernels/ would carry a stale library across a kernel change; one that covered the
    whole tree would rebuild every library after a doc edit."""

    def test_digest_covers_the_library_inputs_only(self):
        inputs = [f for f in mutants.tree_files()
                  if f == mutants.LIBRARY_INPUTS[0] or f.startswith(mutants.LIBRARY_INPUTS[1:])]
        self.assertTrue(any(f.startswith("kernels/") for f in inputs) and any(f.startswith("contract/") for f in inputs))
        with tempfile.TemporaryDirectory() as tmp:
            dst = Path(tmp)
            for f in inputs:
                (dst / f).parent.mkdir(parents=True, exist_ok=True)
                (dst / f).write_bytes((mutants.ROOT / f).read_bytes())
            base = mutants.tree_digest(dst, ["-DX=1"])
            self.assertNotEqual(base, mutants.tree_digest(dst, ["-DX=2"]), "the configuration is an input")
            kernel = next(f for f in inputs if f.startswith("kernels/src/"))
            (dst / kernel).write_bytes((dst / kernel).read_bytes() + b"\n")
            self.assertNotEqual(base, mutants.tree_digest(dst, ["-DX=1"]), f"{kernel} is an input")
            (dst / kernel).write_bytes((mutants.ROOT / kernel).read_bytes())
            self.assertEqual(base, mutants.tree_digest(dst, ["-DX=1"]))
            # A doc or a test is not read at all: the copy need not even hold it.
            self.assertFalse((dst / "README.md").exists())


if __name__ == "__main__":
    os.chdir(mutants.ROOT)
    unittest.main(verbosity=1)
