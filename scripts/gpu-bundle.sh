#!/usr/bin/env bash
# Copies what scripts/gpu-check.sh needs from a gpu build (test, example and benchmark programs and
# the test list) into a lean folder to carry to the GPU machine, leaving object files behind.
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]     (defaults: build/gpu gpu-bundle)
set -eu
build="${1:-build/gpu}"
bundle="${2:-gpu-bundle}"
rm -rf "$bundle"
mkdir -p "$bundle"
cp "$build/gpumath-tests.txt" "$bundle/"
while read -r _ rel; do
  mkdir -p "$bundle/$(dirname "$rel")"
  cp "$build/$rel" "$bundle/$rel"
done < "$build/gpumath-tests.txt"
mkdir -p "$bundle/examples" "$bundle/bench"
for f in "$build"/examples/[0-9][0-9]_* "$build"/bench/bench_*; do
  [ -x "$f" ] && [ -f "$f" ] && cp "$f" "$bundle/${f#"$build"/}"
done
strip --strip-all "$bundle"/tests/*/test_* "$bundle"/tests/test_* "$bundle"/examples/* "$bundle"/bench/* 2>/dev/null || true
du -sh "$bundle"
