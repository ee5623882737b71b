#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of bytes from outside gpumath (tests/fuzz/targets): builds
# the `fuzz` preset (clang, libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer), writes each
# target's seeds (real images made here by NVRTC, nvJitLink and the toolkit's fatbinary), replays
# the inputs kept in tests/fuzz/regressions/<target>/, then fuzzes each target for
# GPUMATH_FUZZ_SECONDS seconds (default 30) from its seeds and the corpus grown by earlier runs in
# build/fuzz/run/corpus. A crash, a sanitizer report, a leak of the deleter count, a hang over 10 s
# or an input needing over 2 GiB fails the run, naming the input libFuzzer kept: fix the code,
# then add that file to tests/fuzz/regressions/<target>/ so the test suite replays it for good.
#   scripts/fuzz.sh [TARGET...]        (default: every target)
set -eu
cd "$(dirname "$0")/.."
seconds="${GPUMATH_FUZZ_SECONDS:-30}"
export CUDAToolkit_ROOT="${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"
# The CUDA runtime maps memory where ASan keeps its shadow gap; gpumath's caches live for the
# process (as in the asan preset).
export ASAN_OPTIONS="${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
bin=build/fuzz/tests/fuzz/targets
run=build/fuzz/run
rm -rf "$run/seeds" "$run/artifacts"
mkdir -p "$run/seeds" "$run/artifacts" "$run/corpus"
"$bin/fuzz_seeds" "$run/seeds" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$bin"/fuzz_*; do
    name=$(basename "$f"); name=${name#fuzz_}
    [ "$name" = seeds ] || targets+=("$name")
  done
fi
status=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "$run/corpus/$t" "$run/artifacts/$t" "$run/seeds/$t"
  kept=(tests/fuzz/regressions/"$t"/*)
  if [ -e "${kept[0]}" ]; then
    if ! "$bin/fuzz_$t" -timeout=10 -rss_limit_mb=2048 "${kept[@]}" >"$run/$t.replay.log" 2>&1; then
      summary+=("FAIL  $t: a kept regression input fails again (log: $run/$t.replay.log)")
      status=1
      continue
    fi
  fi
  if "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$run/artifacts/$t/" "$run/corpus/$t" "$run/seeds/$t" >"$run/$t.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$run/$t.log" | grep -o '[0-9]*$' || echo "?")
    summary+=("PASS  $t: ${runs} inputs in ${seconds} s, corpus of $(ls "$run/corpus/$t" | wc -l)")
  else
    found=$(ls "$run/artifacts/$t" 2>/dev/null | head -n 1)
    summary+=("FAIL  $t: ${found:+$run/artifacts/$t/$found} (log: $run/$t.log); fix it, then keep the input in tests/fuzz/regressions/$t/")
    grep -E "ERROR|SUMMARY|gpumath fuzz|==[0-9]+==" "$run/$t.log" | head -n 20 | sed 's/^/      /' >&2 || true
    status=1
  fi
done
echo "fuzz: ${#targets[@]} targets, ${seconds} s each"
for line in "${summary[@]}"; do echo "$line"; done
exit $status
