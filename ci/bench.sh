#!/usr/bin/env bash
# The benchmark run, on a machine with a GPU: configures and builds kvconform-bench with CUDA (and
# libkvconform_kernels.so, for --kernels/--against comparisons), runs every case with Google
# Benchmark's JSON output, then plots the bandwidth ratios and writes the summary tables.
#
#   ci/bench.sh                                   # our kernels, every case
#   ci/bench.sh --against /path/to/shim.so        # side by side with another kernel library
#   ci/bench.sh --tokens 1,2048 --formats packed584 --benchmark_filter=kv_only   # a subset
#
# Arguments are passed to kvconform-bench. Results go to $KVC_BENCH_OUT, else $OUT/bench (the
# folder a device run hands back), else build/bench-out: bench.json, bench.txt (console output and
# the GPU summary), bench_summary.md (the tables of a docs/results/ entry), kv_only_ratio.{png,svg},
# legacy_ratio.{png,svg}, configure.log, build.log.
#
# It never installs anything (the device machine reaches no package registry): when .deps/root
# exists (staged copies of Google Benchmark, CLI11, GoogleTest, nlohmann-json, DLPack), it is used
# as CMAKE_PREFIX_PATH and LD_LIBRARY_PATH.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

build="${KVC_BENCH_BUILD:-$root/build/bench}"
out="${KVC_BENCH_OUT:-}"
if [ -z "$out" ]; then
  if [ -n "${OUT:-}" ]; then out="$OUT/bench"; else out="$root/build/bench-out"; fi
fi
mkdir -p "$out"

deps="$root/.deps/root/usr"
if [ -d "$deps" ]; then
  export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

step() { echo "== bench: $*"; }
run_logged() {  # run_logged LOG CMD...: output to LOG; on failure its tail on stderr
  local log="$1"; shift
  if ! "$@" >"$log" 2>&1; then
    echo "bench: failed: $* (last lines of $log):" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

step "configure ($build)"
run_logged "$out/configure.log" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVC_CUDA=ON
step "build kvconform-bench"
run_logged "$out/build.log" cmake --build "$build" --target kvconform-bench kvconform_kernels -j"$(nproc)"

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$out/nvidia-smi.csv" 2>&1 || true

step "run (json: $out/bench.json)"
"$build/bench/kvconform-bench" --benchmark_out="$out/bench.json" --benchmark_out_format=json "$@" 2>&1 | tee "$out/bench.txt"

# The plots need matplotlib: the image's python3 has it; elsewhere Debian's python3-matplotlib
# lives under /usr/bin/python3.
python="${PYTHON:-python3}"
if ! "$python" -c "import matplotlib" 2>/dev/null && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  python=/usr/bin/python3
fi
step "plots and tables"
"$python" "$root/bench/plot_bench.py" "$out/bench.json" --markdown "$out/bench_summary.md" --no-plot
if "$python" -c "import matplotlib" 2>/dev/null; then
  for op in kv_only legacy; do
    "$python" "$root/bench/plot_bench.py" "$out/bench.json" --op "$op" --heads 8 --out "$out/${op}_ratio" ||
      echo "bench: no $op plot (no GPU row of that op ran: see bench.txt)" >&2
  done
else
  echo "bench: matplotlib not found for $python: no plots (bench.json is complete; run bench/plot_bench.py elsewhere)" >&2
fi
echo
cat "$out/bench_summary.md"
