#!/usr/bin/env bash
# Installs what is missing, checks the formatting (scripts/lint.sh), builds gpumath with its tests
# (release preset), runs clang-tidy over the library (scripts/tidy.sh) and the whole test suite;
# then builds the `asan` preset (AddressSanitizer + UndefinedBehaviorSanitizer) and runs the CPU
# tests again under it (set GPUMATH_SKIP_ASAN=1 to skip that part), and fuzzes every parser of
# outside bytes for GPUMATH_FUZZ_SECONDS each (default 30; scripts/fuzz.sh; GPUMATH_SKIP_FUZZ=1
# skips it). Tests that need a GPU skip with a reason on a machine without one.
set -eu
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/lint.sh
export CUDAToolkit_ROOT="${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"
jobs="$(nproc)"
cmake --preset release
cmake --build --preset release -j "$jobs"
bash scripts/tidy.sh
set -o pipefail
ctest --preset release -j "$jobs" | tee build/release/ctest.log
if [ "${GPUMATH_SKIP_ASAN:-0}" != 1 ]; then
  cmake --preset asan -DGPUMATH_BUILD_EXAMPLES=OFF -DGPUMATH_BUILD_BENCH=OFF
  cmake --build --preset asan -j "$jobs"
  # Packaging tests rebuild the library without sanitizers; the release run covers them.
  ctest --preset asan -j "$jobs" -L cpu -LE packaging
  echo "asan: CPU tests passed under AddressSanitizer and UndefinedBehaviorSanitizer"
fi
if [ "${GPUMATH_SKIP_FUZZ:-0}" != 1 ]; then
  GPUMATH_FUZZ_SECONDS="${GPUMATH_FUZZ_SECONDS:-30}" bash scripts/fuzz.sh
fi
# The release run's summary is the suite's verdict; print it last for readers of the log.
grep -E "tests passed|tests failed|Total Test time" build/release/ctest.log
