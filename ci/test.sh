#!/usr/bin/env bash
# The test command: installs missing dependencies (and libtorch for the golden fixtures'
# regeneration check, ci/install-golden-deps.sh), checks formatting (ci/check-format.sh), then
#   1. configures and builds preset `default` (CUDA code compiled when nvcc is present) with
#      warnings as errors, and runs every test of that tree that needs no GPU (test preset
#      `default`: labels cpu, exhaustive, fuzz, golden, slow). GPU tests are excluded; on a
#      machine without a GPU they would only report as skipped; then a sample of three oracle
#      mutants (ci/mutants.py --quick, docs/mutation.md), each of which must be killed, so that the
#      mutation driver stays honest;
#   2. builds preset `sanitize` (CPU only, AddressSanitizer + UndefinedBehaviorSanitizer) and runs
#      its tests without the exhaustive and slow labels (test preset `sanitize`): any finding
#      fails the run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$KVC_ROOT/ci/install-deps.sh"
"$KVC_ROOT/ci/check-format.sh"

"$KVC_ROOT/ci/install-golden-deps.sh"
kvc_configure_and_build default -DKVC_WERROR=ON
ctest --preset default

echo
echo "== mutation sample: 3 oracle mutants, each must be killed (ci/mutants.py, docs/mutation.md) =="
python3 "$KVC_ROOT/ci/mutants.py" run --target oracle --quick \
  --only pad_byte_one,scale_exponent_floor,rope_mul_sub_no_fma

echo
echo "== sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer (build/sanitize) =="
kvc_configure_and_build sanitize -DKVC_WERROR=ON
ctest --preset sanitize
