#!/usr/bin/env bash
# Runs every built example in BUILD_DIR/examples (default build/release). An example that needs a
# GPU and finds none exits with 77 and is reported as skipped; any other non-zero status fails.
set -u
build="${1:-build/release}"
shopt -s nullglob
examples=("$build"/examples/[0-9][0-9]_*)
if [ ${#examples[@]} -eq 0 ]; then
  echo "no examples found in $build/examples: build first" >&2
  exit 1
fi
passed=0; skipped=0; failed=0
for ex in "${examples[@]}"; do
  [ -x "$ex" ] || continue
  name=$(basename "$ex")
  echo "=== $name"
  "$ex"
  rc=$?
  if [ $rc -eq 0 ]; then passed=$((passed + 1)); echo "--- $name: ok"
  elif [ $rc -eq 77 ]; then skipped=$((skipped + 1)); echo "--- $name: GPU part skipped (this machine has no GPU)"
  else failed=$((failed + 1)); echo "--- $name: FAILED (exit $rc)"
  fi
done
echo "examples: $passed passed, $failed failed, $skipped stopped before their GPU part (no GPU)"
[ $failed -eq 0 ]
