#!/usr/bin/env bash
# kvc_sanitizer_run.sh: one compute-sanitizer run of a program, as a ctest entry
# (kvc_add_sanitizer_test in cmake/KvcTest.cmake registers it).
#
#   kvc_sanitizer_run.sh --tool memcheck|racecheck|initcheck|synccheck --probe PROBE
#                        [--sanitizer PATH] [--expect-report REGEX] -- PROGRAM [ARGS...]
#
# Exit status, read by ctest: 0 passed, 1 failed, 77 skipped (the entry's SKIP_RETURN_CODE).
#  - Skipped, with the reason on a "KVC_SANITIZER_SKIPPED:" line, when compute-sanitizer is not
#    installed (neither PATH nor the path found at configure time), when PROBE finds no CUDA
#    device, or when compute-sanitizer refuses the device ("Device not supported": it does on
#    some sandboxed GPU runtimes). Never reported as passed in those cases.
#  - Without --expect-report: passes when the tool exits 0, reports "ERROR SUMMARY: 0 errors"
#    (when it prints a summary) and the program is a GoogleTest run with at least one passed
#    test and none failed (a sanitizer that exits 0 without running the program checks nothing).
#  - With --expect-report (the planted-defect entries): passes only when the tool exits with the
#    error exit code and its report has a line matching REGEX.
set -uo pipefail

readonly SKIP_CODE=77
readonly ERROR_EXITCODE=86

tool="" probe="" sanitizer="" expect_report=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool="$2"; shift 2 ;;
    --probe) probe="$2"; shift 2 ;;
    --sanitizer) sanitizer="$2"; shift 2 ;;
    --expect-report) expect_report="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "kvc_sanitizer_run.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
[ $# -gt 0 ] || { echo "kvc_sanitizer_run.sh: no program to run" >&2; exit 1; }

skip() { echo "KVC_SANITIZER_SKIPPED: $*"; exit $SKIP_CODE; }
fail() { echo "KVC_SANITIZER_FAILED: $*"; exit 1; }

case "$tool" in
  memcheck) options=(--tool memcheck --leak-check full --padding 32) ;;
  racecheck) options=(--tool racecheck) ;;
  initcheck) options=(--tool initcheck) ;;
  synccheck) options=(--tool synccheck) ;;
  *) fail "unknown tool '$tool'" ;;
esac

if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
  sanitizer="$(command -v compute-sanitizer || true)"
fi
[ -n "$sanitizer" ] || skip "compute-sanitizer not found (not at the path found at configure time, not on PATH)"

if ! probe_output="$("$probe" 2>&1)"; then
  skip "${probe_output:-the device probe failed}"
fi
echo "kvc_sanitizer_run.sh: $probe_output"
echo "kvc_sanitizer_run.sh: $sanitizer ${options[*]} --error-exitcode $ERROR_EXITCODE $*"

log="$(mktemp "${TMPDIR:-/tmp}/kvc-sanitizer.XXXXXX")"
trap 'rm -f "$log"' EXIT
"$sanitizer" "${options[@]}" --error-exitcode "$ERROR_EXITCODE" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# The tool's own refusal of the device (its lines start with "========="): skipped, not failed,
# and never passed. An API error such as cudaErrorNotSupported is a finding, not a refusal.
refusal="$(grep -Eim1 '^=+ .*(device (is )?not supported|not supported on this (device|platform)|unsupported (device|gpu))' "$log")"
[ -n "$refusal" ] && skip "compute-sanitizer refused the device on this runtime: ${refusal#*= }"

summary="$(grep -Eo 'ERROR SUMMARY: [0-9]+ errors?' "$log" | tail -1)"

if [ -n "$expect_report" ]; then
  match="$(grep -Em1 -- "$expect_report" "$log")"
  if [ "$rc" -eq "$ERROR_EXITCODE" ] && [ -n "$match" ]; then
    echo "KVC_SANITIZER: $tool reported the planted defect, as it must: $match"
    exit 0
  fi
  fail "$tool did not report the planted defect: exit code $rc (expected $ERROR_EXITCODE), report line matching '$expect_report': ${match:-none}${summary:+; $summary}"
fi

passed="$(grep -c '^\[       OK \]' "$log")"
failed="$(grep -c '^\[  FAILED  \] .*\.' "$log")"
[ "$rc" -eq 0 ] || fail "$tool exited with $rc${summary:+ ($summary)}"
case "$summary" in "" | "ERROR SUMMARY: 0 errors") ;; *) fail "$tool: $summary" ;; esac
[ "$failed" -eq 0 ] || fail "$failed test(s) failed under $tool"
[ "$passed" -gt 0 ] || fail "no test passed under $tool: the filter matched nothing, every test skipped, or the program never ran"
echo "KVC_SANITIZER: $tool clean: $passed test(s) passed, ${summary:-no error summary printed}"
exit 0
