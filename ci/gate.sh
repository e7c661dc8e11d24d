#!/usr/bin/env bash
# The pre-merge gate: same set-up as ci/test.sh's first step, then the conformance stages and a
# summary table (tests and wall time per stage): the CPU suite (oracle and conformance,
# exhaustive sweeps, fuzz pass), then `kvconform run --cpu-only` (the runner's own stage; its
# count is the checks that passed). Each ctest stage is a test preset (CMakePresets.json:
# gate-*); together they partition the non-GPU tests of build/default, and the gate checks that
# (a test in no stage, or in two, fails it). Exit 0 only when every stage passes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kvc_configure_and_build default -DKVC_WERROR=ON

test_count() { ctest --preset "$1" -N | sed -n 's/^Total Tests: //p'; }

declare -a names counts seconds results kinds
run_stage() {
  local name="$1" preset="$2" start
  names+=("$name")
  kinds+=(ctest)
  counts+=("$(test_count "$preset")")
  start=$(date +%s)
  echo
  echo "== gate stage: $name (ctest --preset $preset) =="
  if ctest --preset "$preset"; then results+=("PASS"); else results+=("FAIL"); fi
  seconds+=("$(($(date +%s) - start))")
}
run_stage "oracle and conformance (cpu)" gate-conformance
run_stage "exhaustive primitives" gate-exhaustive
run_stage "fuzz pass and mutation test" gate-fuzz

# The kvconform runner, CPU only: the oracle against the frozen fixtures, every validation rule,
# the registry's scenarios up to 1025 tokens, the classifier on its planted defects. Not a ctest
# preset, so not part of the partition check below; its reports land in build/gate/.
runner_stage() {
  local out="$KVC_ROOT/build/gate" start
  mkdir -p "$out"
  names+=("kvconform run --cpu-only")
  kinds+=(runner)
  start=$(date +%s)
  echo
  echo "== gate stage: kvconform run --cpu-only (reports: $out/kvconform-run.{json,xml}) =="
  if "$KVC_ROOT/build/default/runner/kvconform" run --cpu-only --max-tokens 1025 \
       --json "$out/kvconform-run.json" --junit "$out/kvconform-run.xml" 2>&1 | tee "$out/kvconform-run.log"; then
    results+=("PASS")
  else
    results+=("FAIL")
  fi
  # The result line: "PASSED: 674 checks, 674 passed, ..."
  counts+=("$(sed -n 's/^[A-Z]*: \([0-9]*\) checks,.*/\1/p' "$out/kvconform-run.log" | tail -1)")
  seconds+=("$(($(date +%s) - start))")
}
runner_stage

echo
echo "kvconform gate summary"
printf '  %-32s %6s %8s  %s\n' "stage" "tests" "wall s" "result"
status=0 staged=0 total_seconds=0
for i in "${!names[@]}"; do
  printf '  %-32s %6s %8s  %s\n' "${names[$i]}" "${counts[$i]}" "${seconds[$i]}" "${results[$i]}"
  [ "${results[$i]}" = PASS ] || status=1
  [ "${kinds[$i]}" = ctest ] && staged=$((staged + counts[i]))
  total_seconds=$((total_seconds + seconds[i]))
done
expected=$(test_count default)
printf '  %-32s %6s %8s\n' "total" "$staged" "$total_seconds"
if [ "$staged" -ne "$expected" ]; then
  echo "  the stages hold $staged tests but build/default has $expected non-GPU tests: a label escapes the stages"
  status=1
fi
exit $status
