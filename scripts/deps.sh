#!/usr/bin/env bash
# Makes sure what gpumath builds with is installed, from Debian's packages, and finds the CUDA
# Toolkit (13.x, with cudart, cuBLASLt, cuFFT, cuRAND, NVRTC, nvJitLink; looked for in $CUDA_PATH,
# $CUDA_HOME, /usr/local/cuda). Installs what is missing with apt-get when run as root; otherwise
# prints the exact command to run.
#
#   scripts/deps.sh examples   the library and its examples (scripts/examples.sh): g++, cmake, make,
#                              fmt, xxHash and DLPack's header (libdlpack-dev). Downloads nothing.
#   scripts/deps.sh [test]     everything the test suite uses (scripts/test.sh, so CI): the above,
#                              GoogleTest, binutils (readelf), python3, clang-format and clang-tidy
#                              (scripts/lint.sh, scripts/tidy.sh), clang with libFuzzer
#                              (scripts/fuzz.sh) and Doxygen (the API reference). Also puts a DLPack
#                              1.x header in build/_deps/dlpack-1/include (Debian 12 ships 0.6,
#                              which lacks the versioned structs that the core.dlpack_versioned test
#                              covers), taken from PyPI's apache-tvm-ffi wheel and checked against a
#                              known hash; when it cannot be had the step warns and that test reports
#                              itself skipped. And, so that CI builds sparse::DirectSolver, cuDSS's
#                              headers in build/_deps/cudss/include (cmake/gpumath-cudss.cmake looks
#                              there), taken from PyPI's nvidia-cudss-cu13 wheel (about 160 MB to
#                              download) and checked against known hashes; when they cannot be had
#                              the step warns and gpumath builds without the solver. Only the
#                              headers are kept: to run the solver, `pip install nvidia-cudss-cu13`
#                              and point GPUMATH_CUDSS_LIBRARY at its libcudss.so.1.
set -eu
cd "$(dirname "$0")/.."

# A DLPack 1.x header for the versioned-struct tests (see above).
fetch_dlpack1() {
  dlpack1_wheel="apache-tvm-ffi==0.1.15.post2"
  dlpack1_member="tvm_ffi/include/dlpack/dlpack.h"
  dlpack1_sha256="62052bef24bd69bb7b52e95428f9e99bd7951783850c36c5f2a41e71fd63c2fc"
  dlpack1_dir="build/_deps/dlpack-1/include/dlpack"
  if [ ! -f "$dlpack1_dir/dlpack.h" ]; then
    tmp=$(mktemp -d)
    if python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$dlpack1_wheel" >/dev/null 2>&1 &&
       python3 - "$tmp" "$dlpack1_member" "$dlpack1_sha256" "$dlpack1_dir" <<'PY'
import glob, hashlib, os, sys, zipfile
folder, member, digest, out = sys.argv[1:]
with zipfile.ZipFile(glob.glob(os.path.join(folder, "*.whl"))[0]) as wheel:
    data = wheel.read(member)
if hashlib.sha256(data).hexdigest() != digest:
    sys.exit(f"{member}: unexpected sha256 {hashlib.sha256(data).hexdigest()}")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "dlpack.h"), "wb") as f:
    f.write(data)
PY
    then
      echo "gpumath: DLPack 1.x header for the versioned-struct tests in $dlpack1_dir"
    else
      echo "gpumath: warning: could not fetch a DLPack 1.x header ($dlpack1_wheel from PyPI); core.dlpack_versioned will be skipped" >&2
    fi
    rm -rf "$tmp"
  fi
}

# cuDSS's headers for building sparse::DirectSolver (see above). cuDSS is loaded at run time.
fetch_cudss() {
  cudss_wheel="nvidia-cudss-cu13==1.0.0.35"
  cudss_dir="build/_deps/cudss/include"
  if [ ! -f "$cudss_dir/cudss.h" ]; then
    tmp=$(mktemp -d)
    echo "gpumath: fetching cuDSS's headers from PyPI ($cudss_wheel, about 160 MB) for sparse::DirectSolver"
    if python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$cudss_wheel" >/dev/null 2>&1 &&
       python3 - "$tmp" "$cudss_dir" <<'PY'
import glob, hashlib, os, sys, zipfile
folder, out = sys.argv[1:]
digests = {
    "cudss.h": "12c4d857a14f36455c296cd6d3eb9f2c975a8112f6d9eddfddc72dcf82c857e0",
    "cudss_data_types.h": "49520d4a2a589f3fec1b1321539b797113743a1d05ee6816797e5c2a1159e3d3",
    "cudss_distributed_interface.h": "4728a9c8732115d2afbd6b4b134d32b37bff78352761f9bcdd2d72519bc47e21",
    "cudss_threading_interface.h": "fc75d249db11fdd78e2d6f47fb042aad511daca7fc6964f86c39eb3f7420e0b5",
}
headers = {}
with zipfile.ZipFile(glob.glob(os.path.join(folder, "*.whl"))[0]) as wheel:
    for name, digest in digests.items():
        data = wheel.read("nvidia/cu13/include/" + name)
        if hashlib.sha256(data).hexdigest() != digest:
            sys.exit(f"{name}: unexpected sha256 {hashlib.sha256(data).hexdigest()}")
        headers[name] = data
os.makedirs(out, exist_ok=True)
for name, data in headers.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
PY
    then
      echo "gpumath: cuDSS headers in $cudss_dir (sparse::DirectSolver is built; cuDSS itself is loaded at run time)"
    else
      echo "gpumath: warning: could not fetch cuDSS's headers ($cudss_wheel from PyPI); sparse::DirectSolver will throw NotSupported" >&2
    fi
    rm -rf "$tmp"
  fi
}

mode="${1:-test}"
case "$mode" in
  examples|test) ;;
  *) echo "usage: scripts/deps.sh [examples|test]" >&2; exit 2 ;;
esac
missing=()
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v make >/dev/null 2>&1 || missing+=(make)
[ -f /usr/include/fmt/format.h ] || missing+=(libfmt-dev)
[ -f /usr/include/xxhash.h ] || missing+=(libxxhash-dev)
[ -f /usr/include/dlpack/dlpack.h ] || missing+=(libdlpack-dev)
if [ "$mode" = test ]; then
  command -v readelf >/dev/null 2>&1 || missing+=(binutils)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  command -v clang-format >/dev/null 2>&1 || missing+=(clang-format)
  command -v clang-tidy >/dev/null 2>&1 || missing+=(clang-tidy)
  command -v clang++ >/dev/null 2>&1 || missing+=(clang)
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || missing+=(libclang-rt-dev)
  command -v doxygen >/dev/null 2>&1 || missing+=(doxygen)
  [ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
fi
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
if [ "$mode" = test ]; then fetch_dlpack1; fetch_cudss; fi
cmake_version=$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')
if [ "$(printf '%s\n3.24\n' "$cmake_version" | sort -V | head -n1)" != "3.24" ]; then
  echo "gpumath: CMake $cmake_version found, 3.24 or newer needed" >&2
  exit 1
fi
echo "gpumath: dependencies present (CUDA Toolkit at $cuda, CMake $cmake_version)"
