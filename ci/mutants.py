#!/usr/bin/env python3
"""mutants.py: mutation testing of the gate (docs/mutation.md). Python 3 standard library only.

A mutant is one small find/replace patch against our oracle or our kernels, modelling a bug a
person writes (the catalogs: mutation/oracle_mutants.json, mutation/kernel_mutants.json). The
driver applies each patch to a copy of the tree, rebuilds incrementally, runs the checks that must
catch it, fastest first, and records killed / survived / build_failed, the first check that
failed and the seconds to it. The score says what share of realistic defects the gate catches,
which the suite's planted defects alone cannot say.

  mutants.py check [--catalog F]...
      Validate the catalogs against the current tree (fields, unique names, classes from
      docs/mutation.md, `find` occurring exactly once). Registered as a ctest test: a source
      change that moves a mutant's anchor fails CI with the mutant's name.
  mutants.py run --target oracle [--only a,b] [--sample N] [--shard K/N] [--json out.json]
                 [--jobs N] [--quick]
      CPU: copy of the tree in build/mutation/oracle/src, one CPU-only build (shared oracle),
      per mutant the kill set of `ctest --preset default` in phases, fast checks first; --quick
      runs and builds only the primitive suites (CI's sample).
  mutants.py run --target kernels [--build-only] [--rebuild] [--suites ...] [--max-tokens N] ...
      CUDA: per mutant the ABI library build/mutation/kernels/<name>.so; then (on a GPU machine)
      `kvconform run`, the GPU ctest suite, the compute-sanitizer entries, stopping at the first
      failure. --build-only stops after the build (proves every mutant applies and compiles).

Exit status: 0 every selected mutant killed (or, --build-only, built); 1 a mutant survived,
failed to build, or was killed only by a check that also fails on the unmutated tree; 2 a catalog
error, a usage error, or an environment the run cannot use (no GPU for a kernel run).
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = {"oracle": "mutation/oracle_mutants.json", "kernels": "mutation/kernel_mutants.json"}
CLASSES_DOC = "docs/mutation.md"
FIELDS = ("name", "target", "file", "find", "replace", "class", "models", "reveals", "expected_killer", "observable")
# A mutant may only touch the code its target builds: an oracle mutant that edits a test would
# measure nothing.
TARGET_DIRS = {"oracle": ("oracle/",), "kernels": ("kernels/",)}
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")

# The oracle's kill set is ctest --preset default's (every test without the gpu label), in four
# phases, fastest first; ctest stops at the first failure. Phase 1: the oracle's own primitive and
# hand-vector suites (seconds). Phase 2: the golden fixtures (an independent generator). Phase 3:
# everything else that is neither exhaustive nor slow. Phase 4: the exhaustive sweeps and the slow
# tests (minutes). The phases partition the set; the driver checks that their counts add up.
PRIMITIVE_TESTS = (
    "Fp8E4m3", "Bf16", "Fp16", "Ue8m0", "Rope", "CosSinCache", "RmsNorm", "Rsqrt", "RecordLayout", "RecordDecoder",
    "RecordLocate", "QOutCodec", "KvInsertEdgeValues", "KvNorm", "LegacyQ", "LegacyFp16", "LegacyFp16Formats",
    "LegacyKvSide", "KvOnlyIsRopeThenStore", "StoreConventions", "ClampOrderPolicy", "InfBlockPolicy", "RopePolicy",
    "PadBytePolicy", "ExponentPolicy", "AmaxFloorPolicy", "StackedOracleWorkedExample", "StackedOracle",
    "StackedParamCache",
)
# The executables that hold the primitive suites: all a --quick run builds (with the oracle).
PRIMITIVE_TARGETS = (
    "fp8_e4m3_test", "bf16_test", "ue8m0_test", "rope_test", "rms_norm_test", "record_codec_test",
    "q_out_codec_test", "kv_insert_edge_test", "kv_norm_test", "legacy_insert_test", "store_rotated_test",
    "profile_test", "stacked_ctx_kv_oracle_test", "stacked_ctx_kv_eligibility_test",
)
# ctest names are GoogleTest's: [Prefix/]Suite.Test[/Param].
PRIMITIVE_RE = "^([A-Za-z0-9_]+/)?(" + "|".join(PRIMITIVE_TESTS) + r")\."
# The catalog's own tests (mutation.*) check the copy's sources, which a mutant changes on purpose:
# they are not part of the kill set.
SELF_TESTS_RE = r"^mutation\."
ORACLE_PHASES = (
    ("primitives", ["-LE", "gpu|exhaustive|slow", "-R", PRIMITIVE_RE]),
    ("golden", ["-L", "golden", "-LE", "gpu|exhaustive|slow", "-E", PRIMITIVE_RE]),
    ("rest", ["-LE", "gpu|exhaustive|slow|golden", "-E", f"{PRIMITIVE_RE}|{SELF_TESTS_RE}"]),
    ("exhaustive+slow", ["-L", "exhaustive|slow", "-LE", "gpu"]),
)
ALL_CPU_TESTS = ["-LE", "gpu", "-E", SELF_TESTS_RE]

# The kernel gate, fast first: the runner's suites at a bounded size, then the GPU ctest suite,
# then the compute-sanitizer entries.
KERNEL_SUITES = "matrix,dspark,golden,invalid,kv_norm,fused_kv_norm,store,stacked"
KERNEL_CTEST_PHASES = (("gpu", ["-L", "gpu", "-LE", "sanitizer"]), ("sanitizer", ["-L", "sanitizer"]))
KERNEL_PHASES = ("runner",) + tuple(name for name, _ in KERNEL_CTEST_PHASES)
# Not part of the gate, so not in the default: the ctest entries the catalog names as the mutant's
# expected killer, run after the runner and before the whole GPU suite. It tells a survivor of the
# runner that its expected check kills it without the whole suite's minutes; a kill there is
# reported as such (killed_in "expected"), and its seconds count the runner phase before it.
OPTIONAL_KERNEL_PHASES = ("expected",)
RUNNER_FAILED_RE = re.compile(r"^\s*\[\s*\d+/\s*\d+\]\s+(kernel|oracle)\s+(.*):\s+failed\b")
# A ctest result line: "3/7 Test #3: Name ....***Exception: SegFault  0.11 sec". Anything but
# Passed and Skipped is a failure: Failed, Timeout, Exception: <signal>, Subprocess aborted, Not Run.
CTEST_FAILED_RE = re.compile(r"Test\s+#\d+:\s+(\S+)\s+\.+(?!\.)\s*(?!Passed\b|\*\*\*Skipped\b)(\S.*?)\s+[\d.]+ sec\s*$")


def fail(message):
    print(f"mutants: {message}", file=sys.stderr)
    sys.exit(2)


# --------------------------------------------------------------------------------------------
# Catalogs


def bug_classes():
    """The classes listed in docs/mutation.md's table under '## Bug classes' (the one list)."""
    text = (ROOT / CLASSES_DOC).read_text(encoding="utf-8")
    section = re.search(r"^## Bug classes\s*$(.*?)(?=^## )", text, re.S | re.M)
    if not section:
        fail(f"{CLASSES_DOC} has no '## Bug classes' section")
    return re.findall(r"^\|\s*`([a-z0-9-]+)`\s*\|", section.group(1), re.M)


def occurrences(text, needle):
    """Overlapping occurrences: 'exactly once' must hold however the text is scanned."""
    count, at = 0, text.find(needle)
    while at >= 0:
        count += 1
        at = text.find(needle, at + 1)
    return count


def load_catalog(path):
    """(target, entries, errors) of one catalog file; its target comes from its name."""
    rel = os.path.relpath(path, ROOT)
    target = next((t for t, p in CATALOGS.items() if (ROOT / p).resolve() == Path(path).resolve()), None)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return target, [], [f"{rel}: cannot read: {e}"]
    if not isinstance(data, dict) or set(data) != {"mutants"} or not isinstance(data["mutants"], list):
        return target, [], [f'{rel}: must be {{"mutants": [ ... ]}}']
    return target, data["mutants"], []


def check_entry(rel, target, m, classes, seen):
    if not isinstance(m, dict):
        return [f"{rel}: an entry is not an object"]
    name = m.get("name") if isinstance(m.get("name"), str) else "?"
    where = f"{rel}: {name}"
    errors = []
    missing = [f for f in FIELDS if f not in m]
    unknown = sorted(set(m) - set(FIELDS))
    if missing:
        errors.append(f"{where}: missing {', '.join(missing)}")
    if unknown:
        errors.append(f"{where}: unknown field(s) {', '.join(unknown)}")
    for f in FIELDS:
        if f in m and (not isinstance(m[f], str) or (f != "replace" and not m[f].strip())):
            errors.append(f"{where}: {f} must be a non-empty string" + (" (may be empty)" if f == "replace" else ""))
    if errors:
        return errors
    if not NAME_RE.match(name):
        errors.append(f"{where}: name is not snake_case")
    if name in seen:
        errors.append(f"{where}: name also used in {seen[name]}")
    seen[name] = rel
    if target is not None and m["target"] != target:
        errors.append(f"{where}: target {m['target']!r} in the {target} catalog")
    if m["target"] not in TARGET_DIRS:
        errors.append(f"{where}: target must be one of {', '.join(TARGET_DIRS)}")
    elif not m["file"].startswith(TARGET_DIRS[m["target"]]):
        errors.append(f"{where}: file {m['file']} is outside {' '.join(TARGET_DIRS[m['target']])}")
    if m["class"] not in classes:
        errors.append(f"{where}: class {m['class']!r} is not in {CLASSES_DOC}'s list")
    if m["find"] == m["replace"]:
        errors.append(f"{where}: find == replace (no change)")
    path = ROOT / m["file"]
    if ".." in Path(m["file"]).parts or Path(m["file"]).is_absolute() or not path.is_file():
        errors.append(f"{where}: no file {m['file']}")
    else:
        n = occurrences(path.read_text(encoding="utf-8"), m["find"])
        if n != 1:
            errors.append(f"{where}: find occurs {n} times in {m['file']} (must be exactly once: "
                          "the source moved under the mutant; update its anchor)")
    return errors


def check_catalogs(paths):
    """(entries by target, errors) over the given catalogs."""
    classes = bug_classes()
    seen, errors, entries = {}, [], {t: [] for t in CATALOGS}
    for path in paths:
        target, items, errs = load_catalog(path)
        errors += errs
        rel = os.path.relpath(path, ROOT)
        for m in items:
            e = check_entry(rel, target, m, classes, seen)
            errors += e
            if not e:
                entries[m["target"]].append(m)
    return entries, errors


def cmd_check(args):
    paths = args.catalog or [ROOT / p for p in CATALOGS.values()]
    entries, errors = check_catalogs(paths)
    for e in errors:
        print(f"ERROR {e}")
    n = sum(len(v) for v in entries.values())
    counts = ", ".join(f"{len(v)} {t}" for t, v in entries.items())
    if errors:
        print(f"mutants check: {len(errors)} error(s) in {len(paths)} catalog(s)")
        return 1
    print(f"mutants check: {n} mutants ({counts}) in {len(paths)} catalog(s): OK")
    return 0


# --------------------------------------------------------------------------------------------
# The tree copy and the build


def tree_files():
    """Tracked files, plus untracked files git does not ignore (what a commit of the tree holds)."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                         check=True, capture_output=True).stdout.decode()
    return sorted(f for f in out.split("\0") if f and (ROOT / f).is_file())


def sync_tree(dst):
    """Make dst a copy of the tree, writing only files whose bytes differ: an unchanged file keeps
    its mtime, so the copy's build stays incremental from one run to the next."""
    files = tree_files()
    wanted = set(files)
    written = 0
    for f in files:
        src, out = ROOT / f, dst / f
        data = src.read_bytes()
        if out.is_file() and out.read_bytes() == data:
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        shutil.copymode(src, out)
        written += 1
    removed = 0
    for p in sorted(dst.rglob("*"), reverse=True):
        rel = p.relative_to(dst).as_posix()
        if p.is_file() and rel not in wanted:
            p.unlink()
            removed += 1
    print(f"tree copy {dst}: {len(files)} files, {written} written, {removed} removed", flush=True)


# What the kernel library is compiled from: kernels/ builds on contract/ alone (docs/architecture:
# kernels never include the oracle or anything above them), configured by the top-level CMake
# files. A change elsewhere (a test, a doc, this script) leaves every mutant library valid, so
# libraries built on one machine (--build-only) are reused on another with the same inputs.
LIBRARY_INPUTS = ("CMakeLists.txt", "cmake/", "contract/", "kernels/")


def tree_digest(dst, cmake_args):
    """What a mutant library is built from: the copy's LIBRARY_INPUTS and the configuration."""
    h = hashlib.sha256(json.dumps(cmake_args).encode())
    for f in tree_files():
        if f == LIBRARY_INPUTS[0] or f.startswith(LIBRARY_INPUTS[1:]):
            h.update(f.encode() + b"\0" + (dst / f).read_bytes())
    return h.hexdigest()


def configure(work, cmake_args):
    build = work / "build"
    stamp = work / "configure-args.json"
    if (build / "CMakeCache.txt").is_file() and stamp.is_file() and json.loads(stamp.read_text()) == cmake_args:
        return
    cmd = ["cmake", "-S", str(work / "src"), "-B", str(build), "-G", "Ninja"] + cmake_args
    print("+ " + " ".join(cmd), flush=True)
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        fail("configure failed")
    stamp.write_text(json.dumps(cmake_args))


def build(work, jobs, targets, log):
    """(ok, seconds) of `cmake --build` of the targets (all when empty), output to log."""
    cmd = ["cmake", "--build", str(work / "build"), "-j", str(jobs)]
    for t in targets:
        cmd += ["--target", t]
    t0 = time.monotonic()
    with open(log, "a", encoding="utf-8") as out:
        out.write("+ " + " ".join(cmd) + "\n")
        out.flush()
        ok = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode == 0
    return ok, time.monotonic() - t0


def tail(path, lines=15):
    try:
        return "".join(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(True)[-lines:])
    except OSError:
        return ""


# --------------------------------------------------------------------------------------------
# Running a check and finding its first failure


def run_streamed(cmd, log, pattern, env=None, timeout=None, stop_on_match=False):
    """Run cmd, copy its output to log, and time the first line matching pattern.

    Returns (exit status or None on timeout, first match or None, seconds to that match). With
    stop_on_match the process group is ended at the first match (the runner has no stop-on-failure
    of its own; the rest of its run would only cost device time)."""
    t0 = time.monotonic()
    first, first_s = None, None
    timed_out = threading.Event()

    def end_group(p):
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    with open(log, "a", encoding="utf-8") as out:
        out.write("+ " + " ".join(cmd) + "\n")
        out.flush()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True, text=True, errors="replace", bufsize=1)
        # A watchdog, not a check per line: a hung check prints nothing.
        watchdog = None
        if timeout is not None:
            watchdog = threading.Timer(timeout, lambda: (timed_out.set(), end_group(p)))
            watchdog.start()
        try:
            for line in p.stdout:
                out.write(line)
                if first is None:
                    m = pattern.search(line)
                    if m:
                        first, first_s = m, time.monotonic() - t0
                        out.flush()
                        if stop_on_match:
                            end_group(p)
                            break
        finally:
            if watchdog is not None:
                watchdog.cancel()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            p.stdout.close()
    return (None if timed_out.is_set() and first is None else p.returncode), first, first_s


def ctest_failure_name(match):
    """The failed test's name, with the kind of failure unless it is a plain failure."""
    kind = match.group(2).replace("***", " ").strip()
    return match.group(1) if kind == "Failed" else f"{match.group(1)} ({kind})"


def ctest_cmd(build_dir, jobs, selection):
    return ["ctest", "--test-dir", str(build_dir), "--stop-on-failure", "-j", str(jobs), "--no-tests=ignore"] + selection


def ctest_count(build_dir, selection):
    out = subprocess.run(["ctest", "--test-dir", str(build_dir), "-N"] + selection, capture_output=True,
                         text=True).stdout
    m = re.search(r"Total Tests:\s*(\d+)", out)
    return int(m.group(1)) if m else 0


def forget_ctest_costs(build_dir):
    """ctest starts the tests it measured as slowest (and the last failures) first; the phases
    order the work fast-first, so every run starts from declaration order."""
    for name in ("CTestCostData.txt", "LastTestsFailed.log"):
        try:
            (build_dir / "Testing" / "Temporary" / name).unlink()
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------------------------
# One mutant


def apply_patch(work, m):
    path = work / "src" / m["file"]
    original = path.read_text(encoding="utf-8")
    if occurrences(original, m["find"]) != 1:
        fail(f"{m['name']}: find does not occur exactly once in the copy of {m['file']}")
    path.write_text(original.replace(m["find"], m["replace"]), encoding="utf-8")
    return path, original


def kill_by_ctest_phases(build_dir, phases, args, log, result, elapsed=0.0, env=None):
    """Runs the ctest phases in order, each stopping at its first failure. The first failure kills
    the mutant; running past --timeout leaves it `timed_out` (not a kill). `elapsed`: seconds the
    mutant's checks already took."""
    for phase, selection in phases:
        forget_ctest_costs(build_dir)
        remaining = None if args.timeout is None else max(1.0, args.timeout - elapsed)
        t0 = time.monotonic()
        rc, first, first_s = run_streamed(ctest_cmd(build_dir, args.jobs, selection), log, CTEST_FAILED_RE, env=env,
                                          timeout=remaining)
        if rc is None:
            # The driver's own limit, not a check's verdict: ctest and the runner time out a hung
            # check themselves (a failure, so a kill). Running out of --timeout proves nothing.
            result.update(status="timed_out", killed_in=phase, kill_set_seconds=round(elapsed + (time.monotonic() - t0), 1))
            result["notes"].append(f"no check failed before --timeout {args.timeout} s ran out in phase {phase}")
            return
        if first is not None or rc != 0:
            what = ctest_failure_name(first) if first else f"(ctest exit {rc} in phase {phase}, no failed test named)"
            result.update(status="killed", killed_by=what, killed_in=phase,
                          seconds_to_kill=round(elapsed + (first_s if first_s is not None else time.monotonic() - t0), 1))
            return
        elapsed += time.monotonic() - t0
    result.update(status="survived", kill_set_seconds=round(elapsed, 1))


def kill_oracle(work, phases, args, log, result):
    kill_by_ctest_phases(work / "build", phases, args, log, result)


def run_runner(runner, so, suites, args, log, env):
    """kvconform run against the library, ended at its first failed check."""
    cmd = [str(runner), "run", "--kernels", str(so), "--suites", suites, "--max-tokens", str(args.max_tokens)]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL", "-eL"] + cmd  # progress lines as they come: the time to the failure
    return run_streamed(cmd, log, RUNNER_FAILED_RE, env=env, timeout=args.timeout, stop_on_match=True)


def kill_set_dir(work, args):
    """Where the kill set's executables are: the copy's build, or --kill-set-build."""
    return Path(args.kill_set_build).resolve() if getattr(args, "kill_set_build", None) else work / "build"


def kill_kernels(work, so, args, log, result, m):
    build_dir = kill_set_dir(work, args)
    env = dict(os.environ, KVC_KERNELS=str(so))
    runner = build_dir / "runner" / "kvconform"
    elapsed = 0.0
    # 1. kvconform run at a bounded size: exit 1 is a kill; 4 and 5 compared nothing (or too
    # little) and are reported, never counted as a kill; 3 means no GPU here.
    t0 = time.monotonic()
    if "runner" not in args.kill_phases:
        rc, first, first_s = 0, None, None
    else:
        rc, first, first_s = run_runner(runner, so, args.suites, args, log, env)
    if first is not None:
        result.update(status="killed", killed_by=f"kvconform run: {first.group(1)} {first.group(2)}",
                      killed_in=f"runner:{first.group(2).split()[0]}", seconds_to_kill=round(first_s, 1))
        return
    if rc is None:
        result.update(status="timed_out", killed_in="runner", kill_set_seconds=round(time.monotonic() - t0, 1))
        result["notes"].append(f"kvconform run reported no failed check before --timeout {args.timeout} s ran out")
        return
    if rc == 3:
        fail("kvconform run found no usable GPU (exit 3): run the kernel catalog on a GPU machine, or --build-only")
    if rc in (1, 2):
        # 2: the library did not load (or the run could not start); the verification on the
        # unmutated library tells a mutant's fault from the driver's.
        result.update(status="killed", killed_by=f"kvconform run (exit {rc})", killed_in="runner",
                      seconds_to_kill=round(time.monotonic() - t0, 1))
        return
    if rc in (4, 5):
        result["notes"].append(f"kvconform run exit {rc} ({'NOTHING CHECKED' if rc == 4 else 'INCOMPLETE'}): not a kill")
    elif rc != 0:
        result["notes"].append(f"kvconform run exit {rc}")
    elapsed += time.monotonic() - t0
    # 2. (only when asked) the catalog's expected killer alone, 3. the GPU ctest suite, 4. the
    # compute-sanitizer entries.
    phases = [("expected", ["-R", m["expected_killer"]])] if "expected" in args.kill_phases else []
    phases += [p for p in KERNEL_CTEST_PHASES if p[0] in args.kill_phases]
    kill_by_ctest_phases(build_dir, phases, args, log, result, elapsed=elapsed, env=env)
    if result["status"] == "survived" and not set(KERNEL_PHASES) <= set(args.kill_phases):
        result["notes"].append(f"survived the phases run ({', '.join(args.kill_phases)}), not the whole gate")


# --------------------------------------------------------------------------------------------
# The run


def select(entries, only, sample, shard=None):
    if only:
        names = [n.strip() for n in only.split(",") if n.strip()]
        by_name = {m["name"]: m for m in entries}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            fail(f"--only: no mutant named {', '.join(unknown)}")
        entries = [by_name[n] for n in names]
    if sample is not None and sample < len(entries):
        # Evenly spread over the catalog, the same every time.
        step = len(entries) / sample
        entries = [entries[int(i * step)] for i in range(sample)]
    if shard is not None:
        k, n = shard
        entries = entries[k - 1::n]  # every n-th from the k-th: n calls cover the selection once
    return entries


def parse_shard(text):
    m = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        fail(f"--shard wants K/N with 1 <= K <= N, not {text!r}")
    return int(m.group(1)), int(m.group(2))


def kernel_library(build_dir):
    found = sorted(build_dir.rglob("libkvconform_kernels.so"))
    if not found:
        fail(f"no libkvconform_kernels.so under {build_dir}")
    return found[0]


def verify_killers(work, target, targets, results, args, log):
    """A kill counts only if the killing check passes on the unmutated tree (else the check, not
    the mutant, failed). One run of every distinct killer."""
    killed = [r for r in results if r["status"] == "killed"]
    if not killed or args.no_verify:
        return
    build_dir = work / "build"
    print("verifying the killers on the unmutated tree", flush=True)
    if target == "oracle":
        ok, _ = build(work, args.jobs, targets, log)
        if not ok:
            fail(f"the unmutated copy does not build (log: {log})")
        names = sorted({r["killed_by"].split(" (")[0] for r in killed if not r["killed_by"].startswith("(")})
        bad = set()
        for i in range(0, len(names), 50):
            chunk = names[i:i + 50]
            regex = "^(" + "|".join(re.escape(n) for n in chunk) + ")$"
            forget_ctest_costs(build_dir)
            cmd = ["ctest", "--test-dir", str(build_dir), "-j", str(args.jobs), "-R", regex]
            with open(log, "a", encoding="utf-8") as out:
                text = subprocess.run(cmd, capture_output=True, text=True).stdout
                out.write(text)
            bad |= {m.group(1) for m in map(CTEST_FAILED_RE.search, text.splitlines()) if m}
        for r in killed:
            if r["killed_by"].split(" (")[0] in bad:
                r["status"] = "unverified"
                r["notes"].append("the killing test also fails on the unmutated tree")
        return
    # Kernels: the unmutated library against the checks that killed: the runner's killing suites
    # in one run (it must report no failed check), the killing ctest entries by name. `targets`:
    # what the phases run needs (the kill set's build).
    build_dir = kill_set_dir(work, args)
    if not args.kill_set_build:
        ok, _ = build(work, args.jobs, targets, log)
        if not ok:
            fail(f"the unmutated copy does not build (log: {log})")
    so = kernel_library(build_dir)
    env = dict(os.environ, KVC_KERNELS=str(so))
    bad_runner = None
    suites = sorted({r["killed_in"].split(":", 1)[1] for r in killed if r.get("killed_in", "").startswith("runner:")})
    exits = {r["killed_by"] for r in killed if r.get("killed_in") == "runner" and not r["killed_by"].startswith("(")}
    if suites or exits:
        rc, first, _ = run_runner(build_dir / "runner" / "kvconform", so, ",".join(suites) if suites else args.suites,
                                  args, log, env)
        if first is not None or rc in (1, 2, None):
            bad_runner = f"kvconform run exit {rc}" + (f", {first.group(2)} failed" if first else "")
    names = sorted({r["killed_by"].split(" (")[0] for r in killed
                    if not r.get("killed_in", "").startswith("runner") and not r["killed_by"].startswith("(")})
    bad = set()
    if names:
        regex = "^(" + "|".join(re.escape(n) for n in names) + ")$"
        forget_ctest_costs(build_dir)
        cmd = ["ctest", "--test-dir", str(build_dir), "-j", str(args.jobs), "-R", regex]
        text = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
        with open(log, "a", encoding="utf-8") as out:
            out.write(text)
        bad = {m.group(1) for m in map(CTEST_FAILED_RE.search, text.splitlines()) if m}
    for r in killed:
        if r.get("killed_in", "").startswith("runner") and bad_runner:
            r["status"] = "unverified"
            r["notes"].append(f"the unmutated library fails the runner too: {bad_runner}")
        elif r["killed_by"].split(" (")[0] in bad:
            r["status"] = "unverified"
            r["notes"].append("the killing test also fails with the unmutated library")


def markdown_table(results):
    rows = ["| mutant | class | status | killed by | s to kill | build s |", "|---|---|---|---|---|---|"]
    for r in results:
        s = r.get("seconds_to_kill")
        rows.append(f"| `{r['name']}` | {r['class']} | {r['status']} | {r.get('killed_by') or ''} | "
                    f"{'' if s is None else s} | {r.get('build_seconds', '')} |")
    return "\n".join(rows)


def summary(results, build_only):
    if build_only:
        built = sum(r["status"] == "built" for r in results)
        return {"built": built, "build_failed": len(results) - built,
                "line": f"built: {built} of {len(results)} mutants applied and compiled"}
    scored = [r for r in results if r["status"] in ("killed", "survived", "unverified", "timed_out")]
    killed = [r for r in scored if r["status"] == "killed"]
    times = [r["seconds_to_kill"] for r in killed if r.get("seconds_to_kill") is not None]
    median = statistics.median(times) if times else None
    pct = 100.0 * len(killed) / len(scored) if scored else 0.0
    line = (f"mutation score: {len(killed)} of {len(scored)} killed ({pct:.1f}%), median seconds to kill "
            + (f"{median:.1f}" if median is not None else "n/a"))
    other = {s: sum(r["status"] == s for r in results) for s in ("survived", "timed_out", "build_failed", "unverified")}
    extra = ", ".join(f"{v} {k}" for k, v in other.items() if v)
    return {"killed": len(killed), "scored": len(scored), "score_percent": round(pct, 1),
            "median_seconds_to_kill": median, **other, "line": line + (f" ({extra})" if extra else "")}


def cmd_run(args):
    target = args.target
    paths = args.catalog or [ROOT / CATALOGS[target]]
    entries, errors = check_catalogs(paths)
    if errors:
        for e in errors:
            print(f"ERROR {e}", file=sys.stderr)
        fail("the catalog has errors (ci/mutants.py check); no mutant was run")
    chosen = select(entries[target], args.only, args.sample, parse_shard(args.shard) if args.shard else None)
    if not chosen:
        fail(f"no {target} mutant selected")
    if args.build_only and target != "kernels":
        fail("--build-only is for --target kernels")
    if args.kill_set_build and (target != "kernels" or args.build_only):
        fail("--kill-set-build is for a kernel gate run (not --build-only)")
    if args.quick and target != "oracle":
        fail("--quick is for --target oracle")
    phases = ORACLE_PHASES[:1] if args.quick else ORACLE_PHASES

    started = time.monotonic()
    work = Path(args.work).resolve() if args.work else ROOT / "build" / "mutation" / target
    logs = work / "logs"
    (work / "src").mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    sync_tree(work / "src")
    if target == "oracle":
        # CPU only; a shared oracle that no executable relinks against: a mutant costs one object
        # and one shared-library link (docs/mutation.md). Warnings stay warnings: a mutant is
        # measured by the tests, not by -Werror.
        cmake_args = ["-DCMAKE_BUILD_TYPE=Release", "-DKVC_CUDA=OFF", "-DKVC_ORACLE_SHARED=ON",
                      "-DCMAKE_LINK_DEPENDS_NO_SHARED=ON", "-DKVC_WERROR=OFF"]
        # --quick: only the primitive suites' executables (CI's sample: minutes from a clean tree).
        base_targets = ["kvc_oracle", *PRIMITIVE_TARGETS] if args.quick else []
        mutant_targets = base_targets
    else:
        cmake_args = ["-DCMAKE_BUILD_TYPE=Release", "-DKVC_CUDA=ON", "-DKVC_WERROR=OFF"]
        # The runner phase alone needs only the runner; the ctest phases need every test.
        base_targets = (["kvconform_kernels"] if args.build_only else
                        ["kvconform_kernels", "kvconform"] if args.kill_phases == ["runner"] else [])
        mutant_targets = ["kvconform_kernels"]
    tree = tree_digest(work / "src", cmake_args) if target == "kernels" and not args.rebuild else None
    if args.kill_set_build:
        # An existing build of this same tree runs the kill set; nothing is configured or built, so
        # every mutant library must have been built before (--build-only) from these inputs.
        if not (Path(args.kill_set_build) / "CMakeCache.txt").is_file():
            fail(f"--kill-set-build {args.kill_set_build}: not a CMake build directory")
        print(f"kill set: the existing build {args.kill_set_build} (not rebuilt; mutant libraries must be prebuilt)",
              flush=True)
    else:
        configure(work, cmake_args)
        base_log = logs / "_base.log"
        base_log.write_text("")
        print(f"building the kill set once ({' '.join(base_targets) if base_targets else 'all targets'}), "
              f"log {base_log}", flush=True)
        ok, secs = build(work, args.jobs, base_targets, base_log)
        if not ok:
            print(tail(base_log), file=sys.stderr)
            fail("the unmutated copy does not build")
        print(f"  built in {secs:.0f} s", flush=True)
    if target == "oracle" and args.quick:
        n = ctest_count(work / "build", phases[0][1])
        print(f"kill set (--quick): the {n} tests of phase {phases[0][0]}", flush=True)
        if n == 0:
            fail("the quick kill set is empty")
    elif target == "oracle":
        counts = [ctest_count(work / "build", sel) for _, sel in phases]
        total = ctest_count(work / "build", ALL_CPU_TESTS)
        print(f"kill set: {total} tests (ctest without the gpu label) in phases "
              + ", ".join(f"{name} {n}" for (name, _), n in zip(phases, counts)), flush=True)
        if sum(counts) != total or 0 in counts:
            fail(f"the phases do not partition the kill set: {counts} vs {total}")

    results = []
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True).stdout

    def write_report(summ):
        # Written after every mutant too (summary "partial"): a run cut short by a time limit
        # still leaves what it measured.
        if not args.json:
            return
        report = {"target": target, "commit": head, "tree_dirty": bool(dirty.strip()),
                  "catalogs": [os.path.relpath(p, ROOT) for p in paths], "build_only": args.build_only,
                  "kill_set": [{"phase": n, "ctest": sel} for n, sel in phases] if target == "oracle" else
                  {"runner_suites": args.suites, "max_tokens": args.max_tokens, "phases": args.kill_phases},
                  "mutants": results, "summary": summ}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    for i, m in enumerate(chosen, 1):
        log = logs / f"{m['name']}.log"
        log.write_text("")
        result = {"name": m["name"], "target": target, "class": m["class"], "file": m["file"], "status": None,
                  "killed_by": None, "seconds_to_kill": None, "build_seconds": None,
                  "expected_killer": m["expected_killer"], "notes": []}
        print(f"[{i}/{len(chosen)}] {m['name']} ({m['class']}, {m['file']})", flush=True)
        so = work / f"{m['name']}.so"
        stamp = hashlib.sha256((tree + json.dumps(m, sort_keys=True)).encode()).hexdigest() if tree else None
        stamp_file = work / f"{m['name']}.so.stamp"
        if stamp and so.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
            # The same patch on the same tree: the library of an earlier run (a --build-only call
            # before the gate's calls) is this mutant's, and rebuilding it would cost device time.
            result.update(build_seconds=0.0)
            result["notes"].append(f"reused {so.name} (same tree, same patch)")
            if args.build_only:
                result["status"] = "built"
            else:
                kill_kernels(work, so, args, log, result, m)
            print(f"    {result['status']}" + (f" by {result['killed_by']} after {result['seconds_to_kill']} s"
                                                if result["killed_by"] else "") + " (library reused)", flush=True)
            results.append(result)
            write_report({"partial": True, "line": f"{len(results)} of {len(chosen)} mutants run"})
            continue
        if args.kill_set_build:
            result.update(status="build_failed")
            result["notes"].append("no library built from this tree and patch (--kill-set-build builds nothing; "
                                   "run --build-only first)")
            print("    build_failed: no prebuilt library", flush=True)
            results.append(result)
            continue
        path, original = apply_patch(work, m)
        try:
            ok, secs = build(work, args.jobs, mutant_targets, log)
            result["build_seconds"] = round(secs, 1)
            if not ok:
                result["status"] = "build_failed"
                result["notes"].append(tail(log, 8).strip())
            elif target == "kernels":
                shutil.copy2(kernel_library(work / "build"), so)
                stamp_file.write_text(stamp)
                if args.build_only:
                    result["status"] = "built"
                else:
                    kill_kernels(work, so, args, log, result, m)
            else:
                kill_oracle(work, phases, args, log, result)
        finally:
            path.write_text(original, encoding="utf-8")
        s = result["seconds_to_kill"]
        print(f"    {result['status']}" + (f" by {result['killed_by']} after {s} s" if result["killed_by"] else "")
              + f" (build {result['build_seconds']} s)" + "".join(f"\n    note: {n}" for n in result["notes"]), flush=True)
        results.append(result)
        write_report({"partial": True, "line": f"{len(results)} of {len(chosen)} mutants run (not yet verified)"})

    if not args.build_only:
        verify_killers(work, target, base_targets if target == "kernels" else mutant_targets, results, args,
                       logs / "_verify.log")
    elif not args.kill_set_build:
        build(work, args.jobs, mutant_targets, logs / "_restore.log")  # leave the copy's build unmutated
    summ = summary(results, args.build_only)
    summ["wall_seconds"] = round(time.monotonic() - started, 1)
    print()
    print(markdown_table(results))
    print()
    print(summ["line"])
    print(f"wall time {summ['wall_seconds']:.0f} s (copy, build, {len(results)} mutants, verification)")
    write_report(summ)
    if args.build_only:
        return 0 if summ["build_failed"] == 0 else 1
    return 0 if all(r["status"] == "killed" for r in results) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="validate the catalogs against the tree")
    c.add_argument("--catalog", action="append", type=Path, help="a catalog file (default: both)")
    r = sub.add_parser("run", help="run mutants against the gate")
    r.add_argument("--target", choices=sorted(CATALOGS), required=True)
    r.add_argument("--catalog", action="append", type=Path, help="a catalog file (default: the target's)")
    r.add_argument("--only", help="comma-separated mutant names, in that order")
    r.add_argument("--sample", type=int, help="N mutants spread evenly over the catalog")
    r.add_argument("--shard", help="K/N: every N-th selected mutant from the K-th (split a run into N calls)")
    r.add_argument("--json", help="write the results here")
    r.add_argument("--work", help="the copy and its build (default build/mutation/<target>)")
    r.add_argument("--jobs", type=int, default=2, help="build and ctest parallelism (default 2)")
    r.add_argument("--timeout", type=float, default=3600, help="seconds one mutant's checks may take; past it the mutant is "
                   "timed_out, not killed")
    r.add_argument("--no-verify", action="store_true", help="skip re-running the killers on the unmutated tree")
    r.add_argument("--quick", action="store_true",
                   help="oracle: kill set = the primitive suites only, building only their executables (CI's sample)")
    r.add_argument("--build-only", action="store_true", help="kernels: build every mutant library, run nothing")
    r.add_argument("--rebuild", action="store_true",
                   help="kernels: rebuild every mutant library even if one built from the same tree and patch exists")
    r.add_argument("--suites", default=KERNEL_SUITES, help=f"kernels: kvconform run suites (default {KERNEL_SUITES})")
    r.add_argument("--max-tokens", type=int, default=4096, help="kernels: kvconform run --max-tokens (default 4096)")
    r.add_argument("--kill-set-build", help="kernels: run the kill set from this existing build of the same tree "
                   "instead of building the copy (every mutant library prebuilt with --build-only)")
    r.add_argument("--kill-phases", default=",".join(KERNEL_PHASES),
                   help="kernels: the phases to run, a subset of " + ",".join(KERNEL_PHASES + OPTIONAL_KERNEL_PHASES)
                   + " (default all; a survivor of fewer phases is marked so). Splits a device run: the quick "
                   "runner phase for the whole catalog, then the ctest phases for its survivors (--only)")
    args = parser.parse_args()
    if args.command == "check":
        return cmd_check(args)
    args.kill_phases = [p.strip() for p in args.kill_phases.split(",") if p.strip()]
    if not args.kill_phases or any(p not in KERNEL_PHASES + OPTIONAL_KERNEL_PHASES for p in args.kill_phases):
        fail(f"--kill-phases wants a subset of {','.join(KERNEL_PHASES + OPTIONAL_KERNEL_PHASES)}")
    if args.sample is not None and args.sample < 1:
        fail("--sample must be >= 1")
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
