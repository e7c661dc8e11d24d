#!/usr/bin/env bash
# The pre-merge gate: same set-up as ci/test.sh, then the conformance stages and a summary table.
# Today the gate is the CPU suite (oracle primitives, exhaustive sweeps, op conformance, fuzz
# pass); the GPU kernels and the kvconform runner join it as they land. Exit 0 only when every
# stage passes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kvc_configure_and_build default

declare -a names results
run_stage() {
  local name="$1"; shift
  names+=("$name")
  if "$@"; then results+=("PASS"); else results+=("FAIL"); fi
}
run_stage "oracle and conformance (cpu)" ctest --preset quick -LE fuzz
run_stage "exhaustive primitives" ctest --preset cpu -L exhaustive
run_stage "fuzz pass and mutation test" ctest --preset cpu -L fuzz

echo
echo "kvconform gate summary"
status=0
for i in "${!names[@]}"; do
  printf '  %-32s %s\n' "${names[$i]}" "${results[$i]}"
  [ "${results[$i]}" = PASS ] || status=1
done
exit $status
