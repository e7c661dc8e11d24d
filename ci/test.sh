#!/usr/bin/env bash
# The test command: installs missing dependencies, configures, builds, and runs every test that
# needs no GPU (labels cpu, exhaustive, fuzz, golden). GPU tests are excluded here; on a machine
# without a GPU they would only report as skipped.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kvc_configure_and_build default
ctest --preset cpu
