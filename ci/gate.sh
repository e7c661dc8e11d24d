#!/usr/bin/env bash
# The pre-merge gate: same set-up as ci/test.sh's first step, then the conformance stages and a
# summary table (tests and wall time per stage). Today the gate is the CPU suite (oracle and
# conformance, exhaustive sweeps, fuzz pass); the GPU kernels and the kvconform runner join it as
# they land. Each stage is a test preset (CMakePresets.json: gate-*); together they partition the
# non-GPU tests of build/default, and the gate checks that (a test in no stage, or in two, fails
# it). Exit 0 only when every stage passes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kvc_configure_and_build default -DKVC_WERROR=ON

test_count() { ctest --preset "$1" -N | sed -n 's/^Total Tests: //p'; }

declare -a names counts seconds results
run_stage() {
  local name="$1" preset="$2" start
  names+=("$name")
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

echo
echo "kvconform gate summary"
printf '  %-32s %6s %8s  %s\n' "stage" "tests" "wall s" "result"
status=0 staged=0 total_seconds=0
for i in "${!names[@]}"; do
  printf '  %-32s %6s %8s  %s\n' "${names[$i]}" "${counts[$i]}" "${seconds[$i]}" "${results[$i]}"
  [ "${results[$i]}" = PASS ] || status=1
  staged=$((staged + counts[i]))
  total_seconds=$((total_seconds + seconds[i]))
done
expected=$(test_count default)
printf '  %-32s %6s %8s\n' "total" "$staged" "$total_seconds"
if [ "$staged" -ne "$expected" ]; then
  echo "  the stages hold $staged tests but build/default has $expected non-GPU tests: a label escapes the stages"
  status=1
fi
exit $status
