#!/usr/bin/env bash
# The main job: installs what is missing (scripts/deps.sh examples: a compiler, CMake, fmt, xxHash,
# DLPack's header; nothing is downloaded), builds the library and its examples alone (the
# `examples` preset: no tests, benchmarks or header checks) and runs them. On a machine without a
# GPU the JIT compile/link examples still run; the others say that they need a GPU.
set -eu
cd "$(dirname "$0")/.."
bash scripts/deps.sh examples
export CUDAToolkit_ROOT="${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"
cmake --preset examples
cmake --build --preset examples -j "$(nproc)"
bash scripts/run-examples.sh build/examples
