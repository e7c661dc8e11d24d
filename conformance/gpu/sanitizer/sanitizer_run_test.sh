#!/usr/bin/env bash
# sanitizer_run_test.sh: the decisions of cmake/kvc_sanitizer_run.sh, checked with a fake
# compute-sanitizer and a fake device probe (no GPU needed). Each case plants one outcome (a
# finding, a refusal of the device, a run that tested nothing, a missing report...) and requires
# the wrapper's verdict: 0 passed, 1 failed, 77 skipped.
#
#   sanitizer_run_test.sh path/to/kvc_sanitizer_run.sh
set -uo pipefail
wrapper="$1"
work="$(mktemp -d "${TMPDIR:-/tmp}/kvc-sanitizer-run-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The fake tool prints $FAKE_OUTPUT and exits with $FAKE_RC, whatever it is asked to run.
cat > "$work/compute-sanitizer" <<'FAKE'
#!/usr/bin/env bash
printf '%b' "$FAKE_OUTPUT"
exit "$FAKE_RC"
FAKE
printf '#!/usr/bin/env bash\necho "device 0: fake GPU"\n' > "$work/probe-ok"
printf '#!/usr/bin/env bash\necho "no CUDA device: cudaGetDeviceCount returned 0 devices"\nexit 1\n' > "$work/probe-none"
chmod +x "$work/compute-sanitizer" "$work/probe-ok" "$work/probe-none"
mkdir "$work/empty"  # a PATH without compute-sanitizer

ok='[       OK ] Suite.Case (1 ms)\n'
clean='========= ERROR SUMMARY: 0 errors\n'
failures=0
# expect NAME EXPECTED_STATUS EXPECTED_TEXT FAKE_RC FAKE_OUTPUT [wrapper options...]
expect() {
  local name="$1" want="$2" text="$3" rc="$4" output="$5"
  shift 5
  local got
  got="$(env PATH="${WRAPPER_PATH:-$PATH}" FAKE_RC="$rc" FAKE_OUTPUT="$output" "$BASH" "$wrapper" "$@" -- /bin/true 2>&1)"
  local status=$?
  if [ "$status" -ne "$want" ] || ! grep -q -- "$text" <<<"$got"; then
    echo "FAIL $name: exit $status (want $want), output lacks '$text':"
    sed 's/^/    /' <<<"$got"
    failures=$((failures + 1))
  else
    echo "ok   $name: exit $status, $(grep -m1 -- "$text" <<<"$got")"
  fi
}

fake=(--tool memcheck --probe "$work/probe-ok" --sanitizer "$work/compute-sanitizer")
expect "clean run passes" 0 "KVC_SANITIZER: memcheck clean: 1 test" 0 "$ok$clean" "${fake[@]}"
expect "a finding fails" 1 "KVC_SANITIZER_FAILED" 86 \
  "$ok========= Invalid __global__ write of size 4 bytes\n========= ERROR SUMMARY: 1 error\n" "${fake[@]}"
expect "a summary with errors fails even with exit 0" 1 "ERROR SUMMARY: 2 errors" 0 \
  "$ok========= ERROR SUMMARY: 2 errors\n" "${fake[@]}"
expect "a run that tested nothing fails" 1 "no test passed" 0 "$clean" "${fake[@]}"
expect "a failed test fails" 1 "KVC_SANITIZER_FAILED" 1 "$ok[  FAILED  ] Suite.Other (2 ms)\n$clean" "${fake[@]}"
expect "Device not supported is skipped" 77 "refused the device" 255 \
  "========= COMPUTE-SANITIZER\n========= Error: Device not supported. Please refer to the documentation\n" \
  "${fake[@]}"
expect "an API error saying not supported is a finding" 1 "KVC_SANITIZER_FAILED" 86 \
  "========= Program hit cudaErrorNotSupported (error 801) due to \"operation not supported\" on CUDA API call\n========= ERROR SUMMARY: 1 error\n" \
  "${fake[@]}"
expect "no device is skipped" 77 "no CUDA device" 0 "$ok$clean" \
  --tool memcheck --probe "$work/probe-none" --sanitizer "$work/compute-sanitizer"
WRAPPER_PATH="$work/empty" expect "no compute-sanitizer is skipped" 77 "compute-sanitizer not found" 0 "$ok$clean" \
  --tool memcheck --probe "$work/probe-ok" --sanitizer "$work/nowhere"
expect "a planted defect reported passes" 0 "reported the planted defect" 86 \
  "========= Race reported between Write access at 0x10 and Read access at 0x20\n========= ERROR SUMMARY: 1 error\n" \
  --tool racecheck --probe "$work/probe-ok" --sanitizer "$work/compute-sanitizer" --expect-report "Race reported between"
expect "a planted defect not reported fails" 1 "did not report the planted defect" 0 "$clean" \
  --tool racecheck --probe "$work/probe-ok" --sanitizer "$work/compute-sanitizer" --expect-report "Race reported between"
expect "a planted defect with another report fails" 1 "did not report the planted defect" 86 \
  "========= Invalid __global__ read of size 4 bytes\n========= ERROR SUMMARY: 1 error\n" \
  --tool initcheck --probe "$work/probe-ok" --sanitizer "$work/compute-sanitizer" \
  --expect-report "Uninitialized __global__ memory read"
expect "an unknown tool fails" 1 "unknown tool" 0 "$ok$clean" \
  --tool nocheck --probe "$work/probe-ok" --sanitizer "$work/compute-sanitizer"

[ "$failures" -eq 0 ] || { echo "$failures case(s) failed"; exit 1; }
echo "all cases passed"
