#!/usr/bin/env bash
# Installs what is missing, checks the formatting (scripts/lint.sh), builds gpumath with its tests
# (release preset), runs clang-tidy over the library (scripts/tidy.sh) and the whole test suite;
# then builds the `asan` preset (AddressSanitizer + UndefinedBehaviorSanitizer) and runs the CPU
# tests again under it (set GPUMATH_SKIP_ASAN=1 to skip that part). Tests that need a GPU skip with
# a reason on a machine without one.
set -eu
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/lint.sh
export CUDAToolkit_ROOT="${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"
jobs="$(nproc)"
cmake --preset release
cmake --build --preset release -j "$jobs"
bash scripts/tidy.sh
ctest --preset release -j "$jobs"
if [ "${GPUMATH_SKIP_ASAN:-0}" != 1 ]; then
  cmake --preset asan -DGPUMATH_BUILD_EXAMPLES=OFF -DGPUMATH_BUILD_BENCH=OFF
  cmake --build --preset asan -j "$jobs"
  # Packaging tests rebuild the library without sanitizers; the release run covers them.
  ctest --preset asan -j "$jobs" -L cpu -LE packaging
  # The release run's summary is the suite's verdict; print it last for readers of the log.
  echo "asan: CPU tests passed under AddressSanitizer and UndefinedBehaviorSanitizer"
fi
