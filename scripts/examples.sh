#!/usr/bin/env bash
# Installs what is missing, builds gpumath's examples (release preset) and runs them. On a machine
# without a GPU the JIT compile/link examples still run; the others say that they need a GPU.
set -eu
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export CUDAToolkit_ROOT="${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"
cmake --preset release
cmake --build --preset release -j "$(nproc)"
bash scripts/run-examples.sh build/release
