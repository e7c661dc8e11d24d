# Shared by ci/*.sh: repository root, dependency install, configure and build with a preset.
# Sourced, not executed.
KVC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$KVC_ROOT"

# kvc_configure_and_build PRESET [CMAKE ARGS...]: extra arguments go to the configure step
# (ci/test.sh passes -DKVC_WERROR=ON).
kvc_configure_and_build() {
  local preset="${1:-default}"
  shift || true
  "$KVC_ROOT/ci/install-deps.sh"
  cmake --preset "$preset" "$@" >/dev/null
  cmake --build --preset "$preset"
}
