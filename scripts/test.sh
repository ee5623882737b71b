#!/usr/bin/env bash
# Installs what is missing, builds gpumath with its tests (release preset) and runs the whole
# test suite. Tests that need a GPU skip with a reason on a machine without one.
set -eu
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export CUDAToolkit_ROOT="${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"
cmake --preset release
cmake --build --preset release -j "$(nproc)"
ctest --preset release -j "$(nproc)"
