#!/usr/bin/env bash
# Fails when a C++ file differs from the pinned .clang-format (clang-format 14, Debian 12's).
# scripts/test.sh runs it first; `scripts/lint.sh --fix` rewrites the files instead.
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || { echo "lint: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null || find include src tests examples bench -name '*.[ch]pp' -o -name '*.cu' -o -name '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "lint: ${#bad[@]} file(s) differ from .clang-format (run scripts/lint.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  clang-format --dry-run "${bad[0]}" 2>&1 | head -n 20 >&2
  exit 1
fi
echo "lint: ${#files[@]} C++ files match .clang-format ($(clang-format --version | head -n1))"
