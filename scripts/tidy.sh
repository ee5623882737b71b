#!/usr/bin/env bash
# Fails when clang-tidy (Debian 12's, clang-tidy 14) reports anything in the library: every .cpp
# under src/ that the release preset compiles, with the headers of include/gpumath/ and src/ they
# include (.clang-tidy's HeaderFilterRegex). Tests, benchmarks and examples are not checked; they build
# with -Werror. Reads build/release/compile_commands.json, configuring the release preset first
# when it is missing; runs one clang-tidy per file, `nproc` at a time (TIDY_JOBS overrides).
# `scripts/tidy.sh FILE...` checks only those sources. scripts/test.sh (so CI) runs it after the
# release build.
set -eu
cd "$(dirname "$0")/.."
command -v clang-tidy >/dev/null 2>&1 || { echo "tidy: clang-tidy not found (apt-get install clang-tidy)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "tidy: python3 not found" >&2; exit 1; }
build=build/release
if [ ! -f "$build/compile_commands.json" ]; then
  export CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}}"
  cmake --preset release >/dev/null
fi
# The library's sources are the compile database's files under src/ (tests and the rest live elsewhere).
mapfile -t files < <(python3 - "$build/compile_commands.json" "$PWD/src/" <<'PY'
import json, os, sys
paths = {os.path.normpath(os.path.join(e["directory"], e["file"])) for e in json.load(open(sys.argv[1]))}
print("\n".join(sorted(p for p in paths if p.startswith(sys.argv[2]))))
PY
)
if [ $# -gt 0 ]; then
  files=()
  for f in "$@"; do
    case "$f" in /*) files+=("$f") ;; *) files+=("$PWD/$f") ;; esac
  done
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "tidy: no src/ files in $build/compile_commands.json" >&2
  exit 1
fi
jobs="${TIDY_JOBS:-$(nproc)}"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
start=$SECONDS
# One log per file, printed whole afterwards, so that parallel runs do not interleave.
printf '%s\n' "${files[@]}" | TIDY_BUILD="$build" TIDY_LOGS="$logs" xargs -d '\n' -P "$jobs" -n 1 sh -c '
  log="$TIDY_LOGS/$(printf %s "$1" | tr / _).log"
  clang-tidy -p "$TIDY_BUILD" --quiet "$1" >"$log" 2>&1 || printf "%s\n" "$1" >>"$TIDY_LOGS/failed"' _
if [ -s "$logs/failed" ]; then
  mapfile -t failed < <(sort "$logs/failed")
  for f in "${failed[@]}"; do
    grep -Ev '^[0-9]+ (warning|error)s? (and [0-9]+ (warning|error)s? )?generated\.$' \
      "$logs/$(printf %s "$f" | tr / _).log" || true
  done
  # A finding in a header is reported once per file that includes it; count each once.
  findings=$(cat "$logs"/*.log | grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning): ' | sort -u | wc -l)
  echo "tidy: $findings finding(s) in ${#failed[@]} of ${#files[@]} files ($(clang-tidy --version | grep -o 'version [0-9.]*'))" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean in $((SECONDS - start)) s ($(clang-tidy --version | grep -o 'version [0-9.]*'), $jobs jobs)"
