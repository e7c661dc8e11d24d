#!/usr/bin/env bash
# Installs, with apt, Debian's libtorch-dev (torch 1.13, CPU) when it is missing: what the golden
# fixture generator kvconform-golden needs, and with it the regeneration check (label golden:
# regenerating the fixtures gives the committed bytes). ci/test.sh calls it, so CI runs that
# check; the README's set-up (ci/install-deps.sh) does not need it, and every other test runs
# without it. Idempotent; prints nothing when libtorch-dev is present. Measured on Debian 12:
# 124 MB of packages (162 of them), 510 MB installed, under a minute with a warm mirror.
# KVC_SKIP_GOLDEN_DEPS=1 skips it (the regeneration check is then not built, and CMake says so).
set -euo pipefail

if [ "${KVC_SKIP_GOLDEN_DEPS:-0}" = "1" ]; then
  echo "install-golden-deps: skipped (KVC_SKIP_GOLDEN_DEPS=1): the golden regeneration check will not be built"
  exit 0
fi
if dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q "install ok installed"; then
  exit 0
fi

echo "install-golden-deps: installing libtorch-dev (for kvconform-golden and the golden regeneration check)"
start=$SECONDS
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends libtorch-dev >/dev/null
echo "install-golden-deps: libtorch-dev installed in $((SECONDS - start)) s"
