#!/usr/bin/env bash
# Formatting gate: every tracked C++/CUDA source must be as .clang-format (Debian 12's
# clang-format 14) writes it. Prints the offending files and exits 1; `ci/check-format.sh --fix`
# rewrites them in place instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=(--dry-run -Werror)
[ "${1:-}" = "--fix" ] && mode=(-i)

mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format not found (apt-get install clang-format)" >&2
  exit 1
fi
if clang-format "${mode[@]}" "${files[@]}" 2>/tmp/kvc-format.$$; then
  rm -f /tmp/kvc-format.$$
  echo "check-format: ${#files[@]} files formatted as .clang-format says ($(clang-format --version | grep -o 'version [0-9.]*'))"
  exit 0
fi
grep -o '^[^:]*:[0-9]*:[0-9]*: error' /tmp/kvc-format.$$ | cut -d: -f1 | sort -u | sed 's/^/needs formatting: /'
rm -f /tmp/kvc-format.$$
echo "check-format: run ci/check-format.sh --fix"
exit 1
