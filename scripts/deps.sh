#!/usr/bin/env bash
# Makes sure what gpumath builds with is installed: a C++20 compiler, CMake >= 3.24, fmt, xxHash,
# GoogleTest, clang-format and clang-tidy (scripts/lint.sh, scripts/tidy.sh) from Debian's packages,
# and the CUDA Toolkit (13.x; cudart, cuBLASLt, cuFFT, NVRTC, nvJitLink). Installs missing Debian
# packages with apt-get when run as root; otherwise prints the exact command to run. The CUDA
# Toolkit is looked for in $CUDA_PATH, $CUDA_HOME, /usr/local/cuda.
set -eu
missing=()
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v readelf >/dev/null 2>&1 || missing+=(binutils)
command -v clang-format >/dev/null 2>&1 || missing+=(clang-format)
command -v clang-tidy >/dev/null 2>&1 || missing+=(clang-tidy)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ -f /usr/include/fmt/format.h ] || missing+=(libfmt-dev)
[ -f /usr/include/xxhash.h ] || missing+=(libxxhash-dev)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "gpumath: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "gpumath: missing packages: ${missing[*]}" >&2
    echo "gpumath: run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
cuda=""
for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -f "$d/include/cublasLt.h" ] && [ -f "$d/include/nvJitLink.h" ]; then cuda="$d"; break; fi
done
if [ -z "$cuda" ]; then
  echo "gpumath: the CUDA Toolkit (with cuBLASLt, cuFFT, NVRTC, nvJitLink headers and libraries) was not found" >&2
  echo "gpumath: install it (NVIDIA's cuda-toolkit package) or set CUDA_PATH to its root" >&2
  exit 1
fi
cmake_version=$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')
if [ "$(printf '%s\n3.24\n' "$cmake_version" | sort -V | head -n1)" != "3.24" ]; then
  echo "gpumath: CMake $cmake_version found, 3.24 or newer needed" >&2
  exit 1
fi
echo "gpumath: dependencies present (CUDA Toolkit at $cuda, CMake $cmake_version)"
