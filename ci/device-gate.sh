#!/usr/bin/env bash
# The GPU gate: what to run on a machine with a CUDA GPU. Configures and builds the default preset
# with CUDA required, runs every GPU test (label gpu: the kernel matrix, the upstream DSpark test,
# both legacy grids, invalid inputs through the ABI, the device exhaustive sweeps, the device fuzz
# properties, the example shim) against our kernels, and then, for each --kernels PATH (or
# KVC_KERNELS), the same suite against that library. With --sanitizer, a last stage runs the
# compute-sanitizer entries (label sanitizer: the suite's small-shape subset under memcheck,
# racecheck, initcheck and synccheck, and the planted defects each tool must report). Prints a
# summary; exit 0 only when every stage passes (a sanitizer stage whose every entry was skipped,
# because compute-sanitizer refuses the device on this runtime, is reported SKIPPED with the
# reason and does not fail the gate) and no GPU test was skipped for want of a device. The summary
# lists, per ctest stage, the tests it skipped grouped by reason (ctest --output-junit,
# ci/ctest_skips.py), so that a test skipped for a reason other than a missing device (an op the
# library does not implement, a tool that refuses the device) is seen.
#
# It needs no network and never calls apt (GPU machines are often offline): the compilers, CMake
# and Ninja must be installed, and the libraries either installed or staged as unpacked Debian
# packages in .deps/root (docs/device-gate.md, "Offline machines"), which this script puts on
# CMAKE_PREFIX_PATH and LD_LIBRARY_PATH. Without RapidCheck the device fuzz properties are not
# built; the gate says so and goes on.
#
#   ci/device-gate.sh [--kernels PATH.so]... [--jobs N] [--no-exhaustive] [--no-fuzz] [--skip-build]
#                     [--tests REGEX] [--sanitizer] [--no-runner] [--runner-max-tokens N] [--doubles]
#
# --doubles adds one stage per test double of testkit/doubles/expected_verdicts.tsv (libraries that
# behave like foreign ones: fewer ops, another layout, no validation, stray writes, a wrong
# profile): the GPU tests its line names run with KVC_KERNELS=<double>, and must fail exactly
# where the line says (ci/double_verdicts.py); `kvconform run --kernels <double>` must exit with
# the status the line gives; `kvconform probe` (when built) prints what it does with bad input. A
# double's stage passes when every verdict is the one it must be.
#
# After each GPU suite stage, `kvconform run` checks the same library (every op of the ABI: the
# registry's kernel matrix, the DSpark scenario, the golden fixtures, the ABI's validation, the
# standalone and fused kv_norm, the store op and the stacked context-KV op, plus the oracle's CPU
# conformance) and writes build/device-gate/kvconform-<library>.{json,xml}; it passes only when
# every op the library declares supported compared bytes (docs/runner.md, exit statuses 4 and 5).
# --runner-max-tokens trims its registry scenarios (default: all, up to 262144 tokens),
# --no-runner leaves it out.
#
# --tests REGEX runs only the GPU tests whose names match (ctest -R), e.g. 'GraphReplay|Stream'.
# Build directory: build/default (KVC_GATE_BUILD_DIR overrides); logs: build/device-gate/<stage>.log,
# ctest's JUnit files build/device-gate/ctest-<stage>.xml (KVC_GATE_LOG_DIR overrides).
set -euo pipefail
KVC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$KVC_ROOT"

build_dir="${KVC_GATE_BUILD_DIR:-$KVC_ROOT/build/default}"
log_dir="${KVC_GATE_LOG_DIR:-$KVC_ROOT/build/device-gate}"
jobs="$(nproc)"
libraries=()
[ -n "${KVC_KERNELS:-}" ] && libraries+=("$KVC_KERNELS")
exclude_labels=()
skip_build=0
sanitizer=0
tests_regex=""
runner=1
runner_max_tokens=0
doubles=0
while [ $# -gt 0 ]; do
  case "$1" in
    --kernels) libraries+=("$(realpath "$2")"); shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-exhaustive) exclude_labels+=(exhaustive); shift ;;
    --no-fuzz) exclude_labels+=(fuzz); shift ;;
    --skip-build) skip_build=1; shift ;;
    --tests) tests_regex="$2"; shift 2 ;;
    --sanitizer) sanitizer=1; shift ;;
    --no-runner) runner=0; shift ;;
    --runner-max-tokens) runner_max_tokens="$2"; shift 2 ;;
    --doubles) doubles=1; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "device-gate: unknown argument $1" >&2; exit 2 ;;
  esac
done
unset KVC_KERNELS  # the first suite run is always our own kernels
mkdir -p "$log_dir"
rm -f "$log_dir"/ctest-*.xml  # the summary lists the skips of this run's stages only

# Staged dependencies (apt-get download + dpkg -x into .deps/root): no network needed.
deps="$KVC_ROOT/.deps/root"
if [ -d "$deps" ]; then
  export CMAKE_PREFIX_PATH="$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "device-gate: using staged dependencies in $deps"
fi

echo "device-gate: machine"
if command -v nvidia-smi >/dev/null; then nvidia-smi -L || true; else echo "  nvidia-smi not found"; fi
command -v nvcc >/dev/null && nvcc --version | tail -1
echo "  $(nproc) CPU cores; ctest jobs: $jobs"

declare -a names results junits
readonly STAGE_SKIPPED=3  # a stage function's status for "nothing could run here" (with a reason)
# run_stage NAME LOG [--junit FILE] COMMAND...: FILE is the ctest JUnit file the stage writes, whose
# skipped tests the summary lists.
run_stage() {
  local name="$1" log="$2"; shift 2
  local junit=""
  if [ "${1:-}" = --junit ]; then junit="$2"; shift 2; fi
  names+=("$name")
  junits+=("$junit")
  echo
  echo "=== $name (log: $log)"
  local start=$SECONDS rc
  set +e
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  case "$rc" in
    0) results+=("PASS $((SECONDS - start)) s") ;;
    "$STAGE_SKIPPED") results+=("SKIPPED $((SECONDS - start)) s: $(cat "$log_dir/skip-reason" 2>/dev/null)") ;;
    *) results+=("FAIL $((SECONDS - start)) s") ;;
  esac
}

configure_and_build() {
  local generator=()
  command -v ninja >/dev/null || generator=(-G "Unix Makefiles")
  cmake -S "$KVC_ROOT" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DKVC_CUDA=ON || return
  if grep -q "^rapidcheck_DIR:PATH=.*NOTFOUND" "$build_dir/CMakeCache.txt"; then
    echo "device-gate: WARNING: RapidCheck not found: the device fuzz properties (fuzz_device_test) are not built"
  fi
  cmake --build "$build_dir" -j "$jobs"
}

# ctest over label gpu, against our kernels or the library given. A GPU test that skipped because
# no device was found fails the gate: on this machine there must be one.
gpu_suite() {
  local library="${1:-}" junit="$2"
  local ctest_args=(--test-dir "$build_dir" -L gpu --output-on-failure -j "$jobs" --no-tests=error
                    --output-junit "$junit")
  # compute-sanitizer entries carry label gpu too; they run in their own stage (--sanitizer).
  ctest_args+=(-LE "$(IFS='|'; echo "${exclude_labels[*]:+${exclude_labels[*]}|}sanitizer")")
  [ -n "$tests_regex" ] && ctest_args+=(-R "$tests_regex")
  local status=0
  if [ -n "$library" ]; then
    KVC_KERNELS="$library" ctest "${ctest_args[@]}" || status=$?
  else
    ctest "${ctest_args[@]}" || status=$?
  fi
  if grep -qs "no usable CUDA device\|no CUDA device" "$build_dir/Testing/Temporary/LastTest.log"; then
    echo "device-gate: GPU tests were skipped for want of a CUDA device: this gate needs one"
    status=1
  fi
  return $status
}

# kvconform run against our kernels or the library given: exit 0 only when every check passed
# and kernel conformance ran (a machine without a usable device fails it).
runner_run() {
  local library="${1:-}" name="${2:-builtin}"
  local args=(run --max-tokens "$runner_max_tokens" --json "$log_dir/kvconform-$name.json"
              --junit "$log_dir/kvconform-$name.xml")
  [ -n "$library" ] && args+=(--kernels "$library")
  "$build_dir/runner/kvconform" "${args[@]}"
}

# The compute-sanitizer entries. Skipped entries say why on a KVC_SANITIZER_SKIPPED line; when
# every entry was skipped for a reason other than a missing device, the stage is SKIPPED.
sanitizer_suite() {
  local status=0
  ctest --test-dir "$build_dir" -L sanitizer --output-on-failure -j "$jobs" --no-tests=error \
    --output-junit "$log_dir/ctest-sanitizer.xml" || status=$?
  local last="$build_dir/Testing/Temporary/LastTest.log"
  if grep -qs "KVC_SANITIZER_SKIPPED: no usable CUDA device\|KVC_SANITIZER_SKIPPED: no CUDA device" "$last"; then
    echo "device-gate: sanitizer entries were skipped for want of a CUDA device: this gate needs one"
    return 1
  fi
  local total skipped
  total="$(grep -c '^[0-9]*/[0-9]* Testing: ' "$last")"
  skipped="$(grep -c '^KVC_SANITIZER_SKIPPED: ' "$last")"
  echo "device-gate: sanitizer entries: $total run, $skipped skipped"
  grep -h '^KVC_SANITIZER_SKIPPED: ' "$last" | sort | uniq -c | sed 's/^/  /'
  grep -h '^KVC_SANITIZER: ' "$last" | sed 's/^/  /'
  if [ "$status" -eq 0 ] && [ "$total" -gt 0 ] && [ "$skipped" -eq "$total" ]; then
    grep -h '^KVC_SANITIZER_SKIPPED: ' "$last" | head -1 | sed 's/^KVC_SANITIZER_SKIPPED: //' > "$log_dir/skip-reason"
    return $STAGE_SKIPPED
  fi
  return $status
}

if [ $skip_build -eq 0 ]; then
  run_stage "configure and build (CUDA on)" "$log_dir/build.log" configure_and_build
fi
run_stage "GPU suite, our kernels" "$log_dir/gpu-builtin.log" --junit "$log_dir/ctest-gpu-builtin.xml" \
  gpu_suite "" "$log_dir/ctest-gpu-builtin.xml"
if [ $runner -eq 1 ]; then
  run_stage "kvconform run, our kernels" "$log_dir/kvconform-builtin.log" runner_run
fi
for lib in "${libraries[@]}"; do
  run_stage "GPU suite, KVC_KERNELS=$(basename "$lib")" "$log_dir/gpu-$(basename "$lib").log" \
    --junit "$log_dir/ctest-gpu-$(basename "$lib").xml" gpu_suite "$lib" "$log_dir/ctest-gpu-$(basename "$lib").xml"
  if [ $runner -eq 1 ]; then
    run_stage "kvconform run --kernels $(basename "$lib")" "$log_dir/kvconform-$(basename "$lib").log" \
      runner_run "$lib" "$(basename "$lib")"
  fi
done
# double_stage NAME GPU_REGEX MUST_FAIL RUN_EXIT [RUN ARGS...]: one test double's verdicts.
double_stage() {
  local name="$1" tests="$2" must_fail="$3" run_exit="$4"; shift 4
  local lib status=0 rc
  lib="$(find "$build_dir/testkit/doubles" -name "libkvc_double_$name.so" -print -quit 2>/dev/null)"
  if [ -z "$lib" ]; then
    echo "device-gate: libkvc_double_$name.so was not built (a CUDA build builds every double)"
    return 1
  fi
  # A double's verdicts show at small shapes: 4096 tokens unless --runner-max-tokens says otherwise.
  local double_max_tokens=$((runner_max_tokens > 0 ? runner_max_tokens : 4096))
  local junit="$log_dir/ctest-double-$name.xml"
  echo "--- GPU tests matching '$tests' with KVC_KERNELS=$(basename "$lib"); must fail: $must_fail"
  KVC_KERNELS="$lib" ctest --test-dir "$build_dir" -L gpu -LE sanitizer -R "$tests" -j "$jobs" \
    --output-junit "$junit" >"$log_dir/gpu-double-$name.log" 2>&1 || true
  python3 "$KVC_ROOT/ci/double_verdicts.py" "$junit" --must-fail "$must_fail" || status=1
  echo "--- kvconform run --kernels $(basename "$lib") $*; must exit $run_exit"
  set +e
  local size=(--max-tokens "$double_max_tokens")
  case " $* " in *" --max-tokens "*) size=() ;; esac  # the line's own size wins
  "$build_dir/runner/kvconform" run --kernels "$lib" "${size[@]}" \
    --json "$log_dir/kvconform-double-$name.json" "$@" >"$log_dir/kvconform-double-$name.log" 2>&1
  rc=$?
  set -e
  grep -E '^(PASSED|FAILED|NOTHING CHECKED|INCOMPLETE|ERROR)' "$log_dir/kvconform-double-$name.log" | tail -2
  if [ "$rc" -ne "$run_exit" ]; then
    echo "  WRONG VERDICT kvconform run exited $rc, must exit $run_exit (log: $log_dir/kvconform-double-$name.log)"
    status=1
  fi
  if "$build_dir/runner/kvconform" probe --help >/dev/null 2>&1; then
    echo "--- kvconform probe --kernels $(basename "$lib")"
    "$build_dir/runner/kvconform" probe --kernels "$lib" >"$log_dir/probe-double-$name.log" 2>&1 || true
    tail -15 "$log_dir/probe-double-$name.log"
  fi
  return $status
}

if [ $doubles -eq 1 ]; then
  # fd 3: the stages' commands read nothing from the table.
  while IFS=';' read -r name tests must_fail run_exit run_args <&3; do
    name="$(echo "$name" | xargs)"
    case "$name" in '' | '#'*) continue ;; esac
    # shellcheck disable=SC2086  # run_args: words, by design
    run_stage "test double $name" "$log_dir/double-$name.log" \
      double_stage "$name" "$(echo "$tests" | xargs)" "$(echo "$must_fail" | xargs)" "$(echo "$run_exit" | xargs)" $run_args
  done 3<"$KVC_ROOT/testkit/doubles/expected_verdicts.tsv"
fi
if [ $sanitizer -eq 1 ]; then
  run_stage "compute-sanitizer, our kernels" "$log_dir/sanitizer.log" --junit "$log_dir/ctest-sanitizer.xml" \
    sanitizer_suite
fi

echo
echo "kvconform device gate summary"
status=0
for i in "${!names[@]}"; do
  printf '  %-48s %s\n' "${names[$i]}" "${results[$i]}"
  case "${results[$i]}" in PASS* | SKIPPED*) ;; *) status=1 ;; esac
  # The tests the stage skipped, grouped by reason (from ctest's JUnit file).
  if [ -n "${junits[$i]}" ] && [ -s "${junits[$i]}" ]; then
    if command -v python3 >/dev/null; then
      python3 "$KVC_ROOT/ci/ctest_skips.py" "${junits[$i]}" | sed 's/^/      /'
    else
      echo "      (python3 not found: skipped tests not listed; see ${junits[$i]})"
    fi
  fi
done
exit $status
