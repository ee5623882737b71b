#!/usr/bin/env bash
# The whole GPU loop in one command, for a build made elsewhere with the `gpu` preset and carried
# to the GPU machine:
#
#   scripts/gpu-check.sh [BUILD_DIR]          (default: build/gpu)
#
# Runs every test binary, the GPU tests again under compute-sanitizer memcheck, the examples and
# the benchmarks, and writes logs to $OUT (default ./gpu-logs): tests.log, sanitizer.log,
# examples.log, bench.log, bench.json, peers.log, dmon.log (clocks and power), env.txt. Environment knobs:
#   GPUCHECK_STEPS="tests sanitizer examples bench"   steps to run, in the order given (any of
#                            tests sanitizer examples bench peers; peers runs the
#                            bench/peers/*.py scripts, installing wheels found in .whl/ first)
#   GPUCHECK_FILTER=...      gtest filter for the tests step (default: all)
#   GPUCHECK_BENCH_ARGS=...  extra arguments for every benchmark program (e.g. --quick)
#   GPUCHECK_BENCH=...       space-separated benchmark programs to run (default: all)
#   GPUCHECK_TIMEOUT=300     seconds allowed per binary
#   GPUCHECK_SANITIZER_BINARIES=...  extended regex: only test binaries whose name matches run under
#                            memcheck (default: every GPU test binary)
set -u
build="${1:-build/gpu}"
out="${OUT:-$PWD/gpu-logs}"
steps="${GPUCHECK_STEPS:-tests sanitizer examples bench}"
limit="${GPUCHECK_TIMEOUT:-300}"
mkdir -p "$out"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUMATH_CACHE_DIR="${GPUMATH_CACHE_DIR:-$(mktemp -d)}"
# NVLink SHARP (multicast) needs fabric resources that shared GPU hosts do not grant; the dist
# tests and bench_dist run without it unless the caller asks (docs/distributed.md).
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"
# gpumath loads NCCL at run time as libnccl.so.2; where the loader does not know it (a pip wheel's
# copy only), point GPUMATH_NCCL_LIBRARY at the first one found.
if [ -z "${GPUMATH_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2'; then
  nccl_found=$(find /usr /opt -name 'libnccl.so.2' 2>/dev/null | head -n 1)
  [ -n "$nccl_found" ] && export GPUMATH_NCCL_LIBRARY="$nccl_found"
fi
list="$build/gpumath-tests.txt"
[ -f "$list" ] || { echo "missing $list: build with the gpu preset first" >&2; exit 1; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
  nvcc --version 2>/dev/null | tail -1
  uname -a
  echo "NCCL: ${GPUMATH_NCCL_LIBRARY:-$(ldconfig -p 2>/dev/null | grep -m1 'libnccl\.so\.2' | sed 's/.*=> //')}" \
       "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
} > "$out/env.txt"
cat "$out/env.txt"

status=0
summary=()


step_tests() {
  : > "$out/tests.log"
  while read -r label rel; do
    bin="$build/$rel"
    name=$(basename "$rel")
    echo "=== $name ($label)" >> "$out/tests.log"
    timeout "$limit" "$bin" --gtest_color=no ${GPUCHECK_FILTER:+--gtest_filter=$GPUCHECK_FILTER} >> "$out/tests.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then summary+=("PASS  tests      $name")
    else summary+=("FAIL  tests      $name (exit $rc)"); status=1
         grep -E "^\[  FAILED  \]|Failure|error" "$out/tests.log" | tail -n 20 | sed 's/^/      /' >> "$out/failures.txt"
    fi
    grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/tests.log" | tail -n 3 > /dev/null
  done < "$list"
}

step_sanitizer() {
  : > "$out/sanitizer.log"
  while read -r label rel; do
    [ "$label" = gpu ] || continue
    bin="$build/$rel"
    name=$(basename "$rel")
    if [ -n "${GPUCHECK_SANITIZER_BINARIES:-}" ] && ! [[ "$name" =~ $GPUCHECK_SANITIZER_BINARIES ]]; then continue; fi
    echo "=== $name under memcheck" >> "$out/sanitizer.log"
    # The 1 GiB round trip is slow under memcheck and adds nothing over the small sizes; memcheck
    # runs kernels one at a time, so the tests that two streams overlap (*SideBySide*) cannot pass.
    # API errors are not counted: gpumath checks every CUDA return itself (a failing call fails
    # its test), and two are part of normal operation: reading a kernel's parameter count probes
    # cuKernelGetParamInfo past the last parameter (the driver has no count query), and the
    # bad-input tests look up a kernel that does not exist.
    timeout "$limit" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 86 --print-limit 20 \
      "$bin" --gtest_color=no --gtest_filter="${GPUCHECK_SANITIZER_FILTER:--*OneGibibyte*:*Bench*:*SideBySide*}" >> "$out/sanitizer.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then summary+=("PASS  memcheck   $name")
    else summary+=("FAIL  memcheck   $name (exit $rc)"); status=1; fi
  done < "$list"
  grep -E "ERROR SUMMARY" "$out/sanitizer.log" | sort | uniq -c
}

step_examples() {
  if bash "$(dirname "$0")/run-examples.sh" "$build" > "$out/examples.log" 2>&1; then
    summary+=("PASS  examples   $(tail -n 1 "$out/examples.log")")
  else
    summary+=("FAIL  examples   $(tail -n 1 "$out/examples.log")"); status=1
  fi
}

step_bench() {
  : > "$out/bench.log"
  : > "$out/bench.json"
  benches="${GPUCHECK_BENCH:-}"
  if [ -z "$benches" ]; then
    for b in "$build"/bench/bench_*; do [ -x "$b" ] && benches="$benches $(basename "$b")"; done
  fi
  for name in $benches; do
    echo "=== $name" >> "$out/bench.log"
    timeout "$limit" "$build/bench/$name" ${GPUCHECK_BENCH_ARGS:-} --json "$out/$name.json.tmp" >> "$out/bench.log" 2>&1
    rc=$?
    [ -f "$out/$name.json.tmp" ] && { cat "$out/$name.json.tmp" >> "$out/bench.json"; rm -f "$out/$name.json.tmp"; }
    if [ $rc -eq 0 ]; then summary+=("PASS  bench      $name")
    else summary+=("FAIL  bench      $name (exit $rc)"); status=1; fi
  done
  cat "$out/bench.log"
}

step_peers() {
  : > "$out/peers.log"
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gpumath-site .whl/*.whl \
      >> "$out/peers.log" 2>&1 && export PYTHONPATH="/tmp/gpumath-site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  for script in "$(dirname "$0")"/../bench/peers/*.py; do
    name=$(basename "$script" .py)
    case "$name" in _*) continue ;; esac  # shared modules, not peers
    echo "=== $name" >> "$out/peers.log"
    PYTHONUNBUFFERED=1 timeout "$limit" python3 "$script" ${GPUCHECK_BENCH_ARGS:-} >> "$out/peers.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then summary+=("PASS  peers      $name")
    else summary+=("FAIL  peers      $name (exit $rc)"); status=1; fi
  done
  cat "$out/peers.log"
}

# Clocks, power and temperature once a second while the steps run (benchmarks slow down as the
# card heats up; this log shows by how much).
dmon_pid=""
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi dmon -s pc -o T > "$out/dmon.log" 2>&1 &
  dmon_pid=$!
  trap 'kill "$dmon_pid" 2>/dev/null' EXIT
fi

for step in $steps; do
  case "$step" in
    tests|sanitizer|examples|bench|peers) "step_$step" ;;
    *) echo "unknown step $step" >&2; status=1 ;;
  esac
done

[ -n "$dmon_pid" ] && kill "$dmon_pid" 2>/dev/null

echo
echo "=== gpu-check summary"
for line in "${summary[@]}"; do echo "$line"; done
[ -f "$out/failures.txt" ] && { echo "--- failures"; cat "$out/failures.txt"; }
exit $status
